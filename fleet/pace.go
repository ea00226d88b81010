package fleet

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Pace keys live on short leases that nobody renews: a node grants one,
// writes pace keys with it for paceLeaseUse, then grants the next. So a
// key stays at least paceLeaseTTL − paceLeaseUse after its last write,
// longer than any delay it spaces, and then vanishes by itself.
const (
	paceLeaseTTL = 60 * time.Second
	paceLeaseUse = 20 * time.Second
	// MaxIPDelay is the longest shared IP delay the fleet can keep.
	MaxIPDelay = paceLeaseTTL - paceLeaseUse - 10*time.Second
	// paceAttempts bounds compare-and-swap retries of one reservation.
	paceAttempts = 32
)

type paceLease struct {
	id        clientv3.LeaseID
	grantedAt time.Time
}

// ReserveIP reserves the next start of a request to address ip, shared by
// every node of the fleet: it returns the time (on the node's clock) at
// which the request may start, at least delay + the clock skew after the
// start reserved before it, by any node. The caller waits until then (the
// crawl holds its own per-site and per-IP turns meanwhile). The address
// is never stored: the key is an HMAC of it under the fleet's secret.
//
// One compare-and-swap in etcd per call: read the next allowed start,
// write max(now, it) + delay + skew if nobody wrote since. The read is
// skipped when this node wrote the address's key last time it reserved
// (paceGuess): the swap is tried against what it wrote, and if another
// node wrote since, the swap fails and returns the current value, so a
// stale guess costs the round trip it would have saved, and nothing else.
// An error (etcd unreachable, no quorum) means the request must not
// start: the pace fails closed.
func (n *Node) ReserveIP(ctx context.Context, ip netip.Addr, delay time.Duration) (time.Time, error) {
	if delay <= 0 {
		return n.clock.Now(), nil
	}
	if delay > MaxIPDelay {
		return time.Time{}, fmt.Errorf("shared IP delay %v: at most %v in a fleet", delay, MaxIPDelay)
	}
	lease, err := n.paceLease(ctx)
	if err != nil {
		n.m.pace("error")
		return time.Time{}, err
	}
	key := paceKey(n.secret, ip)
	step := delay + n.t.ClockSkew
	kvs, guessed := n.paceGuess(key)
	if !guessed {
		rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
		get, err := n.cli.Get(rctx, key)
		cancel()
		if err != nil {
			n.m.pace("error")
			return time.Time{}, fmt.Errorf("shared IP pace: %w", err)
		}
		kvs = get.Kvs
	}
	for attempt := 0; attempt < paceAttempts; attempt++ {
		var next time.Time
		var rev int64
		if len(kvs) == 1 {
			rev = kvs[0].ModRevision
			if ms, err := strconv.ParseInt(string(kvs[0].Value), 10, 64); err == nil {
				next = time.UnixMilli(ms)
			}
		}
		now := n.clock.Now()
		start := now
		if next.After(now) {
			start = next
		}
		// Whole milliseconds, rounded up: a start is never before the
		// reserved time.
		startMs := (start.UnixNano() + int64(time.Millisecond) - 1) / int64(time.Millisecond)
		value := strconv.FormatInt(startMs+step.Milliseconds(), 10)
		rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
		resp, err := n.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.ModRevision(key), "=", rev)).
			Then(clientv3.OpPut(key, value, clientv3.WithLease(lease))).
			Else(clientv3.OpGet(key)).Commit()
		cancel()
		if err != nil {
			n.m.pace("error")
			return time.Time{}, fmt.Errorf("shared IP pace: %w", err)
		}
		if resp.Succeeded {
			n.paceWrote(key, value, resp.Header.Revision)
			n.m.pace("ok")
			return start.Add(time.Duration(startMs*int64(time.Millisecond) - start.UnixNano())), nil
		}
		if !guessed {
			n.m.pace("retry") // another node reserved meanwhile
		}
		guessed = false
		kvs = resp.Responses[0].GetResponseRange().Kvs
	}
	n.m.pace("error")
	return time.Time{}, errors.New("shared IP pace: too many nodes writing the same address at once")
}

// paceGuessMax bounds the pace keys a node remembers its last write of
// (paceGuess); past it, it forgets them all and reads each again once.
const paceGuessMax = 4096

// paceGuess is the pace key as this node last wrote it, standing in for
// a read before the compare-and-swap; ok is false when it wrote none.
func (n *Node) paceGuess(key string) (kvs []*mvccpb.KeyValue, ok bool) {
	n.paceSeenMu.Lock()
	defer n.paceSeenMu.Unlock()
	kv, ok := n.paceSeen[key]
	if !ok {
		return nil, false
	}
	return []*mvccpb.KeyValue{kv}, true
}

// paceWrote remembers that this node wrote value to key at revision rev.
func (n *Node) paceWrote(key, value string, rev int64) {
	n.paceSeenMu.Lock()
	defer n.paceSeenMu.Unlock()
	if n.paceSeen == nil || len(n.paceSeen) >= paceGuessMax {
		n.paceSeen = map[string]*mvccpb.KeyValue{}
	}
	n.paceSeen[key] = &mvccpb.KeyValue{Key: []byte(key), Value: []byte(value), ModRevision: rev}
}

// paceLease is the lease pace keys are written with now.
func (n *Node) paceLease(ctx context.Context) (clientv3.LeaseID, error) {
	n.paceMu.Lock() // not n.mu: MaySend must not wait for this grant
	defer n.paceMu.Unlock()
	now := n.clock.Now()
	if n.pace.id != 0 && now.Sub(n.pace.grantedAt) < paceLeaseUse {
		return n.pace.id, nil
	}
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	g, err := n.leases.Grant(rctx, int64(paceLeaseTTL/time.Second))
	if err != nil {
		return 0, fmt.Errorf("shared IP pace lease: %w", err)
	}
	n.pace = paceLease{id: g.ID, grantedAt: now}
	return g.ID, nil
}

// paceKey is pace/ip/<hex HMAC-SHA-256 of the address's 16-byte form>.
// IPv4 and its IPv4-mapped IPv6 form are one address.
func paceKey(secret []byte, ip netip.Addr) string {
	b := netip.AddrFrom16(ip.As16()).As16()
	mac := hmac.New(sha256.New, secret)
	mac.Write(b[:])
	return paceIPPrefix + hex.EncodeToString(mac.Sum(nil)[:16])
}
