package removal

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// ErrNotProven: no proof of ownership held; nothing was removed.
var ErrNotProven = errors.New("no proof of ownership found")

// VerifiedReason is the reason recorded with a verified removal.
const VerifiedReason = "owner request, verified"

// Verify checks domain's proofs against its token and, when one holds,
// removes the domain through rm at now. A failed proof removes nothing: the
// result says what each proof found and the error wraps ErrNotProven.
// domain must be normalised (domain.Normalize).
func Verify(ctx context.Context, domain string, secret []byte, chk *Checker, rm Remover, now time.Time, log *slog.Logger) (*Result, error) {
	res := chk.Check(ctx, domain, Token(secret, domain))
	return res, RemoveProven(rm, res, now, log)
}

// RemoveProven removes res.Domain through rm when res holds a proof; when
// it does not, it logs what was tried, removes nothing and returns an error
// wrapping ErrNotProven. It lets a caller check the proofs (slow, on the
// network) before taking the store.
func RemoveProven(rm Remover, res *Result, now time.Time, log *slog.Logger) error {
	log = orDiscard(log)
	if !res.Verified() {
		tried := make([]string, len(res.Attempts))
		for i, a := range res.Attempts {
			tried[i] = a.String()
		}
		log.Info("removal not proven", "domain", res.Domain, "at", now, "tried", strings.Join(tried, " | "))
		return fmt.Errorf("%s: %w; nothing removed", res.Domain, ErrNotProven)
	}
	return remove(rm, res.Domain, VerifiedReason, res.Proof(), now, log)
}

// Force removes domain without a proof, for an operator who verified the
// owner another way (by email, say). reason is required.
func Force(domain, reason string, rm Remover, now time.Time, log *slog.Logger) error {
	if strings.TrimSpace(reason) == "" {
		return errors.New("removal: a forced removal needs a reason")
	}
	return remove(rm, domain, reason, "none: forced by the operator", now, orDiscard(log))
}

func remove(rm Remover, domain, reason, proof string, now time.Time, log *slog.Logger) error {
	if err := rm.RemoveDomain(domain, reason, proof, now); err != nil {
		log.Error("removal failed", "domain", domain, "reason", reason, "proof", proof, "at", now, "err", err)
		return fmt.Errorf("removal: %s: %w", domain, err)
	}
	log.Info("domain removed", "domain", domain, "reason", reason, "proof", proof, "at", now)
	return nil
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
