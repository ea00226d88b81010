package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/crawl/removal"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/domain"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

func newRemoveCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "remove",
		Short: "Remove a domain for good at its owner's verified request",
		Long: `A site owner can have their domain removed from every file mapthenet keeps.
The operator hands out a token ("remove token"); the owner publishes it on the
domain; "remove verify" checks it and removes the domain from the store and
from every snapshot kept under rebuilds/ (each file rewritten atomically), so
it is absent from every file, its links to and from other domains are
dropped, and it is never visited or recorded again.

Proofs, tried in this order:
  dns    a TXT record "` + removal.TXTPrefix + `TOKEN" on the domain
  file   ` + removal.FilePath + ` holding the token (https, then http)
  meta   <meta name="` + removal.MetaName + `" content="TOKEN"> on the home page

While a crawl holds the store, the removal is done by that crawl (asked over
<data-dir>/crawl.sock, as rebuild does), which also stops visiting the domain
at once. Another process holding the store (a rebuild run on its own) is exit
status 3: run the removal again after it. With --snapshots (as rebuild's),
the copies of the snapshots there are rewritten too.`,
		Example: `  mapthenet remove token example.com
  mapthenet remove verify example.com
  mapthenet remove force example.com --reason "owner asked by e-mail from admin@example.com"`,
	}
	cmd.RunE = unknownSubcommand
	cmd.AddCommand(newRemoveTokenCommand(a), newRemoveVerifyCommand(a), newRemoveForceCommand(a))
	addSnapshotsFlag(cmd.PersistentFlags(), &a.removeSnapshots)
	return cmd
}

// oneDomain takes exactly one DOMAIN argument and normalises it to the
// registrable domain, as the store names it.
func oneDomain(cmd *cobra.Command, args []string) (string, error) {
	if len(args) != 1 {
		return "", usagef("%s needs exactly one DOMAIN (got %d arguments)", cmd.CommandPath(), len(args))
	}
	d, err := domain.Normalize(args[0])
	if err != nil {
		return "", usagef("%v", err)
	}
	return d, nil
}

func newRemoveTokenCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "token DOMAIN",
		Short: "Print the verification token of a domain and how to publish it",
		Long: `token prints the domain's verification token: the same every time for
that domain and this data directory (an HMAC of the domain under a secret
created on first use in <data-dir>/keys/` + removal.SecretFile + `, mode 0600).
DOMAIN may be a host or URL; it is reduced to its registrable domain.`,
		Example: `  mapthenet remove token example.com
  mapthenet remove token https://www.example.co.uk/page   # token of example.co.uk`,
		RunE: func(cmd *cobra.Command, args []string) error {
			domain, err := oneDomain(cmd, args)
			if err != nil {
				return err
			}
			secret, err := removal.LoadOrCreateSecret(a.keysDir())
			if err != nil {
				return err
			}
			printTokenHelp(cmd.OutOrStdout(), domain, removal.Token(secret, domain))
			return nil
		},
	}
}

func printTokenHelp(out io.Writer, domain, tok string) {
	fmt.Fprintf(out, "token for %s: %s\n\n", domain, tok)
	fmt.Fprintf(out, "To prove you control %s, publish the token in one of these ways:\n\n", domain)
	fmt.Fprintf(out, "  1. DNS: a TXT record on %s:\n       %s%s\n\n", domain, removal.TXTPrefix, tok)
	fmt.Fprintf(out, "  2. File: https://%s%s (or http://) holding:\n       %s\n\n", domain, removal.FilePath, tok)
	fmt.Fprintf(out, "  3. Meta tag in the home page https://%s/ :\n       <meta name=\"%s\" content=\"%s\">\n\n",
		domain, removal.MetaName, tok)
	fmt.Fprintf(out, "then run: mapthenet remove verify %s\n", domain)
}

// systemRemovalChecker builds the proof checker: the system resolver, and
// signed fetches with the crawler's timeouts (app.newRemovalChecker, which
// tests replace to point the domain at loopback).
func systemRemovalChecker(signer *webbotauth.Signer, clock func() time.Time) *removal.Checker {
	rt := webbotauth.NewTransport(removal.NewTransport(nil), signer, clock)
	return &removal.Checker{Resolver: net.DefaultResolver, Client: removal.NewHTTPClient(rt)}
}

func newRemoveVerifyCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify DOMAIN",
		Short: "Check the owner's proof and, if one holds, remove the domain",
		Long: `verify looks for the token of "remove token" on the domain: a DNS TXT record,
then the file ` + removal.FilePath + ` (https, then http), then the
home page's meta tag. Fetches are signed like the crawler's, follow at most
5 redirects within the domain, read little and time out after 30 s.

When a proof holds, the domain is removed from the store, and the removal is
logged with its proof and time. When none holds, nothing is removed, the
command prints what each proof found and exits with status 1.`,
		Example: `  mapthenet remove verify example.com
  mapthenet remove verify example.com --now 2026-12-02T10:00:00Z`,
		RunE: func(cmd *cobra.Command, args []string) error {
			domain, err := oneDomain(cmd, args)
			if err != nil {
				return err
			}
			now, err := a.now()
			if err != nil {
				return err
			}
			return a.runRemoveVerify(cmd.Context(), cmd.OutOrStdout(), domain, now)
		},
	}
	addNowFlag(cmd, a)
	return cmd
}

func (a *app) runRemoveVerify(ctx context.Context, out io.Writer, domain string, now time.Time) error {
	secret, err := removal.LoadSecret(a.keysDir())
	if err != nil {
		return err
	}
	kr, created, err := webbotauth.LoadOrCreate(a.keysDir(), now)
	if err != nil {
		return err
	}
	if created {
		fmt.Fprintf(out, "created a signing key in %s (the proof fetches are signed)\n", a.keysDir())
	}
	signer, err := webbotauth.NewSigner(kr, webbotauth.SignerOptions{})
	if err != nil {
		return err
	}
	clock := func() time.Time { return now }
	if a.Now == "" {
		clock = time.Now
	}
	chk := a.newRemovalChecker(signer, clock)
	// The proofs are checked before the store is opened, so a slow site
	// never holds the store's lock.
	res := chk.Check(ctx, domain, removal.Token(secret, domain))
	for _, att := range res.Attempts {
		fmt.Fprintln(out, att.String())
	}
	if !res.Verified() {
		return removal.RemoveProven(nil, res, now, a.logger) // logs, removes nothing
	}
	return a.withRemover(ctx, func(rm removal.Remover) error {
		if err := removal.RemoveProven(rm, res, now, a.logger); err != nil {
			return err
		}
		fmt.Fprintf(out, "%s removed (proof: %s)\n", domain, res.Proof())
		return nil
	})
}

// withRemover hands fn what removes a domain everywhere: the store, opened
// here, or, when a crawl holds it, that crawl, asked over crawl.sock. A
// store held by a process that does not answer there is exit status 3.
func (a *app) withRemover(ctx context.Context, fn func(removal.Remover) error) (err error) {
	snapshots := a.removeSnapshots
	if snapshots != "" {
		// Reachable before anything is removed.
		if _, err := snapshotStorage(ctx, a.DataDir, snapshots, a.logger); err != nil {
			return err
		}
	}
	st, err := shard.Open(storePath(a.DataDir), shard.Options{Graph: graph.Options{Logger: a.logger}})
	if errors.Is(err, graph.ErrLocked) {
		sock := filepath.Join(a.DataDir, control.SocketName)
		holder := control.ReadOwner(filepath.Join(a.DataDir, control.StoreOwnerName))
		a.logger.Info("the store is in use: asking the running crawl to remove", "holder", holder.String(), "socket", sock)
		err := fn(crawlRemover{ctx: ctx, sock: sock, snapshots: snapshots})
		if errors.Is(err, control.ErrNoServer) {
			return busyError{fmt.Errorf("the store is in use by %s, and no crawl answers on %s: "+
				"run the removal again when it has finished", holder, sock)}
		}
		return err
	}
	if err != nil {
		return err
	}
	defer func() {
		if cerr := st.Close(); err == nil {
			err = cerr
		}
	}()
	return fn(purgingRemover{ctx: ctx, store: st, dataDir: a.DataDir, log: a.logger, snapshots: snapshots})
}

// RemoveRequest asks a running crawl to remove a domain (the control
// socket's "remove" command): the proof was checked by the caller.
type RemoveRequest struct {
	Domain    string    `json:"domain"`
	Reason    string    `json:"reason"`
	Proof     string    `json:"proof"`
	At        time.Time `json:"at"`
	Snapshots string    `json:"snapshots,omitempty"` // --snapshots: a copy of the snapshots to purge too
}

// crawlRemover removes through the crawl that holds the store.
type crawlRemover struct {
	ctx       context.Context
	sock      string
	snapshots string
}

func (c crawlRemover) RemoveDomain(name, reason, proof string, at time.Time) error {
	return control.Call(c.ctx, c.sock, "remove", RemoveRequest{Domain: name, Reason: reason, Proof: proof, At: at, Snapshots: c.snapshots}, nil)
}

// purgingRemover removes a domain from the store, then from every kept
// snapshot (after the store, so that no rebuild brings it back).
type purgingRemover struct {
	ctx     context.Context
	store   *shard.Store
	dataDir string
	log     *slog.Logger
	// snapshots is --snapshots: a copy of the snapshots to purge as well.
	snapshots string
}

func (p purgingRemover) RemoveDomain(name, reason, proof string, at time.Time) error {
	var st snapshot.Storage = snapshot.Local(p.dataDir)
	if p.snapshots != "" {
		var err error
		if st, err = snapshotStorage(p.ctx, p.dataDir, p.snapshots, p.log); err != nil {
			return err
		}
	}
	if err := p.store.RemoveDomain(name, reason, proof, at); err != nil {
		return err
	}
	res, err := snapshot.PurgeDomainIn(p.ctx, p.dataDir, st, name)
	if err != nil {
		return fmt.Errorf("removed from the store, but not yet from every snapshot (run the removal again): %w", err)
	}
	p.log.Info("domain purged from the kept snapshots", "domain", name, "snapshots", res.Snapshots, "rows", res.Rows)
	return nil
}

// removeHere does a removal another process asked this crawl for.
func removeHere(ctx context.Context, store *shard.Store, dataDir string, log *slog.Logger, args json.RawMessage) (any, error) {
	var req RemoveRequest
	if err := json.Unmarshal(args, &req); err != nil {
		return nil, fmt.Errorf("remove request: %w", err)
	}
	if domain.Check(req.Domain) != nil {
		return nil, fmt.Errorf("remove request: %q is not a registrable domain", req.Domain)
	}
	if strings.TrimSpace(req.Reason) == "" || req.At.IsZero() {
		return nil, errors.New("remove request: a reason and a time are required")
	}
	rm := purgingRemover{ctx: ctx, store: store, dataDir: dataDir, log: log, snapshots: req.Snapshots}
	if err := rm.RemoveDomain(req.Domain, req.Reason, req.Proof, req.At); err != nil {
		return nil, err
	}
	log.Info("domain removed", "domain", req.Domain, "reason", req.Reason, "proof", req.Proof, "at", req.At, "asked_over", control.SocketName)
	return struct{}{}, nil
}

func newRemoveForceCommand(a *app) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "force DOMAIN --reason TEXT",
		Short: "Remove a domain without a published proof (the operator verified the owner)",
		Long: `force removes the domain as verify does, without looking for a proof: for
an owner the operator has verified another way (an e-mail from the domain's
registered contact, say). --reason is required and is recorded and logged
with the removal.`,
		Example: `  mapthenet remove force example.com --reason "owner asked by e-mail from admin@example.com, 2026-12-01"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			domain, err := oneDomain(cmd, args)
			if err != nil {
				return err
			}
			if reason == "" {
				return usagef("remove force: --reason is required (who asked, and how you verified them)")
			}
			now, err := a.now()
			if err != nil {
				return err
			}
			return a.withRemover(cmd.Context(), func(rm removal.Remover) error {
				if err := removal.Force(domain, reason, rm, now, a.logger); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s removed (forced: %s)\n", domain, reason)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, and how the owner was verified (required)")
	addNowFlag(cmd, a)
	return cmd
}
