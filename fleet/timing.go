package fleet

import (
	"fmt"
	"time"
)

// Timing is the fleet's safety in time (doc.go, "Failover timing").
type Timing struct {
	// TTL is the node's lease in etcd: its owner keys vanish this long
	// after its last renewal. Whole seconds, at least 2 (etcd raises
	// shorter leases to its own minimum, 2 s with default timing).
	TTL time.Duration
	// Margin: a node stops sending requests for its shards at its last
	// successful renewal (the time it sent it) + the TTL etcd granted −
	// Margin, by its own monotonic clock.
	Margin time.Duration
	// ResponseTimeout is the longest a request started before that
	// deadline can go on (the crawl's whole-response timeout).
	ResponseTimeout time.Duration
	// ClockSkew bounds the difference between two nodes' wall clocks
	// (NTP keeps it to milliseconds). It is added wherever one node acts
	// on a time another node wrote: the shared IP pace, a clean handoff's
	// quiet time, and (as a margin) the takeover wait.
	ClockSkew time.Duration
}

// Defaults.
const (
	DefaultTTL             = 10 * time.Second
	DefaultResponseTimeout = 30 * time.Second // the crawl's (crawl.DefaultResponseTimeout)
	DefaultClockSkew       = 250 * time.Millisecond
)

// withDefaults fills zero fields: TTL 10 s, Margin TTL/5, ResponseTimeout
// 30 s, ClockSkew 250 ms. A negative ResponseTimeout or ClockSkew means
// zero (tests that have no requests in flight).
func (t Timing) withDefaults() Timing {
	if t.TTL == 0 {
		t.TTL = DefaultTTL
	}
	if t.Margin == 0 {
		t.Margin = t.TTL / 5
	}
	if t.ResponseTimeout == 0 {
		t.ResponseTimeout = DefaultResponseTimeout
	}
	if t.ResponseTimeout < 0 {
		t.ResponseTimeout = 0
	}
	if t.ClockSkew == 0 {
		t.ClockSkew = DefaultClockSkew
	}
	if t.ClockSkew < 0 {
		t.ClockSkew = 0
	}
	return t
}

func (t Timing) check() error {
	if t.TTL < 2*time.Second || t.TTL%time.Second != 0 {
		return fmt.Errorf("fleet lease TTL %v: want whole seconds, at least 2s", t.TTL)
	}
	// A renewal is sent every TTL/3 and may take up to requestTimeout:
	// the deadline must not pass between two renewals that succeed.
	if t.Margin <= 0 || t.renewEvery()+t.requestTimeout()+t.Margin >= t.TTL {
		return fmt.Errorf("fleet lease margin %v: want more than 0 and less than TTL − TTL/3 − %v (TTL %v)", t.Margin, t.requestTimeout(), t.TTL)
	}
	return nil
}

// TakeoverWait is how long a node that took a shard from an owner whose
// lease ran out waits before its first request there: TTL + response
// timeout + clock skew (doc.go says why that is enough).
func (t Timing) TakeoverWait() time.Duration { return t.TTL + t.ResponseTimeout + t.ClockSkew }

// renewEvery is the interval between lease renewals that succeed.
func (t Timing) renewEvery() time.Duration { return t.TTL / 3 }

// retryEvery is the interval between renewals after one failed.
func (t Timing) retryEvery() time.Duration { return min(500*time.Millisecond, t.TTL/8) }

// requestTimeout bounds one call to etcd (a renewal, a transaction).
func (t Timing) requestTimeout() time.Duration { return min(2*time.Second, t.TTL/4) }

// ttlSeconds is the TTL as etcd's lease API takes it.
func (t Timing) ttlSeconds() int64 { return int64(t.TTL / time.Second) }

// leaseView is what a node knows of its lease: etcd granted or renewed it
// at the latest at sentAt (the local clock when the request was sent:
// the server renewed it after that) for ttl.
type leaseView struct {
	id      int64 // 0: no lease
	sentAt  time.Time
	ttl     time.Duration
	joinRev int64 // the revision that wrote nodes/<name> with this lease
	// settleAt is the local clock time from which the session takes
	// unowned shards (NodeOptions.Settle after the join); settled: its
	// record no longer says Settling.
	settleAt time.Time
	settled  bool
}

// deadline is the local time after which the node may no longer assume
// it holds the lease: the lease itself lasts at least until sentAt + ttl
// (the server extends it on a renewal it received after sentAt), and the
// margin absorbs the difference between the two machines' clock rates.
func (l leaseView) deadline(margin time.Duration) time.Time {
	if l.id == 0 {
		return time.Time{}
	}
	return l.sentAt.Add(l.ttl - margin)
}

// valid reports whether now is before the deadline.
func (l leaseView) valid(now time.Time, margin time.Duration) bool {
	return l.id != 0 && now.Before(l.deadline(margin))
}
