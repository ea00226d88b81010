// Package fleettest is an in-memory stand-in for a fleet node, for tests
// of what runs on one (the crawl): it implements fleet.Gate and drives a
// fleet.Handler as a node would, with the test deciding when shards are
// granted, given up or lost and when the lease deadline passes.
package fleettest

import (
	"context"
	"net/netip"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/fleet"
)

// Fake is one node of a pretend fleet. The zero value is not usable:
// call New.
type Fake struct {
	clock clockwork.Clock
	skew  time.Duration

	mu         sync.Mutex
	held       map[int]*holding
	noDeadline bool // the lease deadline has passed
	nextStart  map[netip.Addr]time.Time
	states     map[int]fleet.ShardState
	counts     map[int]fleet.ShardCounts
	paceErr    error
	holdOffs   map[int]map[string]time.Time
	pending    []pendingHoldOff // PutHoldOff past the deadline
	token      int64
}

type holding struct {
	grant   fleet.Grant
	started bool
	ready   bool // Handler.Ready ran
	h       fleet.Handler
	cancel  context.CancelFunc
}

// New makes a fake node on clock (nil: the real clock) whose shared IP
// pace adds skew to every delay, as a node's does.
func New(clock clockwork.Clock, skew time.Duration) *Fake {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	return &Fake{clock: clock, skew: skew, held: map[int]*holding{}, nextStart: map[netip.Addr]time.Time{}, states: map[int]fleet.ShardState{}, counts: map[int]fleet.ShardCounts{}, holdOffs: map[int]map[string]time.Time{}}
}

var _ fleet.Gate = (*Fake)(nil)

// Grant gives the node shard s, ready after wait, and calls h.Start as a
// node would. It returns the grant (its token is larger than any before).
func (f *Fake) Grant(ctx context.Context, h fleet.Handler, s int, wait time.Duration) (fleet.Grant, error) {
	f.mu.Lock()
	f.token++
	g := fleet.Grant{Shard: s, Token: f.token, ReadyAt: f.clock.Now().Add(wait)}
	if st, ok := f.states[s]; ok {
		g.Previous = &st
	}
	g.HoldOff = map[string]time.Time{}
	for d, t := range f.holdOffs[s] {
		g.HoldOff[d] = t
	}
	token := g.Token
	g.Fence = fleet.NewFence(s, token, func() error { return f.check(s, token) })
	hctx, cancel := context.WithCancel(ctx)
	f.held[s] = &holding{grant: g, cancel: cancel, h: h}
	f.mu.Unlock()
	if err := h.Start(hctx, g); err != nil {
		f.mu.Lock()
		delete(f.held, s)
		f.mu.Unlock()
		cancel()
		return g, err
	}
	f.mu.Lock()
	if cur := f.held[s]; cur != nil && cur.grant.Token == token {
		cur.started = true
	}
	f.mu.Unlock()
	if wait <= 0 {
		f.ready(h, s, token)
	} else {
		f.clock.AfterFunc(wait, func() { f.ready(h, s, token) })
	}
	return g, nil
}

// ready calls h.Ready with the shard's hold-offs, as a node does once the
// takeover wait is over, and lets MaySend say yes.
func (f *Fake) ready(h fleet.Handler, s int, token int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur := f.held[s]; cur != nil && cur.grant.Token == token {
		f.readyLocked(h, cur)
	}
}

// readyLocked is ready with f.mu held.
func (f *Fake) readyLocked(h fleet.Handler, cur *holding) {
	if !cur.started || cur.ready {
		return
	}
	s := cur.grant.Shard
	holds := map[string]time.Time{}
	for d, t := range f.holdOffs[s] {
		holds[d] = t
	}
	h.Ready(s, holds)
	cur.ready = true
}

// Take ends the node's holding of s (lost: as if its lease or owner key
// were gone) and calls h.Stop, returning its quiet time.
func (f *Fake) Take(h fleet.Handler, s int, lost bool) time.Time {
	f.mu.Lock()
	cur := f.held[s]
	delete(f.held, s)
	f.mu.Unlock()
	if cur == nil {
		return time.Time{}
	}
	cur.cancel()
	if !cur.started {
		return time.Time{}
	}
	return h.Stop(s, lost)
}

// Export asks h for shard s's part as a fleet rebuild would.
func (f *Fake) Export(ctx context.Context, h fleet.Handler, req fleet.ExportRequest, s int) (fleet.Part, error) {
	f.mu.Lock()
	cur := f.held[s]
	f.mu.Unlock()
	if cur == nil {
		return fleet.Part{}, &fleet.NotNowError{Shard: s, Err: fleet.ErrNotOwner}
	}
	return h.Export(ctx, req, cur.grant.Fence)
}

// SetDeadlinePassed makes MaySend and every fence refuse (true), as when
// etcd is unreachable past the lease deadline, or allow again (false).
func (f *Fake) SetDeadlinePassed(passed bool) {
	f.mu.Lock()
	f.noDeadline = passed
	if !passed {
		for _, p := range f.pending {
			f.putHoldOffLocked(p.shard, p.domain, p.until)
		}
		f.pending = nil
	}
	f.mu.Unlock()
}

// SetPaceError makes ReserveIP fail with err (nil: work again).
func (f *Fake) SetPaceError(err error) {
	f.mu.Lock()
	f.paceErr = err
	f.mu.Unlock()
}

// State is the shard state last put for s.
func (f *Fake) State(s int) (fleet.ShardState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.states[s]
	return st, ok
}

// Counts returns shard s's last counts (PutShardCounts).
func (f *Fake) Counts(s int) (fleet.ShardCounts, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.counts[s]
	return c, ok
}

// MaySend implements fleet.Gate.
func (f *Fake) MaySend(s int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noDeadline {
		return &fleet.NotNowError{Shard: s, Err: fleet.ErrDeadline}
	}
	cur := f.held[s]
	switch {
	case cur == nil:
		return &fleet.NotNowError{Shard: s, Err: fleet.ErrNotOwner}
	case !cur.started:
		return &fleet.NotNowError{Shard: s, Err: fleet.ErrStarting}
	case f.clock.Now().Before(cur.grant.ReadyAt):
		return &fleet.NotNowError{Shard: s, Err: fleet.ErrTakeoverWait, Until: cur.grant.ReadyAt}
	}
	f.readyLocked(cur.h, cur) // if its timer has not run yet
	return nil
}

func (f *Fake) check(s int, token int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noDeadline {
		return &fleet.NotNowError{Shard: s, Err: fleet.ErrDeadline}
	}
	if cur := f.held[s]; cur == nil || cur.grant.Token != token {
		return &fleet.NotNowError{Shard: s, Err: fleet.ErrTokenChanged}
	}
	return nil
}

// ReserveIP implements fleet.Gate: the same rule as a node's, in memory.
func (f *Fake) ReserveIP(_ context.Context, ip netip.Addr, delay time.Duration) (time.Time, error) {
	now := f.clock.Now()
	if delay <= 0 {
		return now, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.paceErr != nil {
		return time.Time{}, f.paceErr
	}
	ip = netip.AddrFrom16(ip.As16())
	start := now
	if next := f.nextStart[ip]; next.After(now) {
		start = next
	}
	f.nextStart[ip] = start.Add(delay + f.skew)
	return start, nil
}

// PutHoldOff implements fleet.Gate: the next Grant of the shard has it,
// and the next Ready. Past the deadline (SetDeadlinePassed) it is kept
// pending, as a node keeps it while etcd does not answer, and recorded
// when the deadline is lifted.
func (f *Fake) PutHoldOff(_ context.Context, s int, domain string, until time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.noDeadline {
		f.pending = append(f.pending, pendingHoldOff{s, domain, until})
		return &fleet.NotNowError{Shard: s, Err: fleet.ErrHoldOffPending}
	}
	f.putHoldOffLocked(s, domain, until)
	return nil
}

type pendingHoldOff struct {
	shard  int
	domain string
	until  time.Time
}

// putHoldOffLocked records a hold-off, never shortening one.
func (f *Fake) putHoldOffLocked(s int, domain string, until time.Time) {
	if f.holdOffs[s] == nil {
		f.holdOffs[s] = map[string]time.Time{}
	}
	if until.After(f.holdOffs[s][domain]) {
		f.holdOffs[s][domain] = until
	}
}

// HoldOffs are the hold-offs recorded for shard s.
func (f *Fake) HoldOffs(s int) map[string]time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]time.Time{}
	for d, t := range f.holdOffs[s] {
		out[d] = t
	}
	return out
}

// PutShardCounts implements fleet.Gate.
func (f *Fake) PutShardCounts(_ context.Context, fence fleet.Fence, c fleet.ShardCounts) error {
	if err := fence.Check(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c.Token = fence.Token
	f.counts[fence.Shard] = c
	return nil
}

// PutShardState implements fleet.Gate.
func (f *Fake) PutShardState(_ context.Context, fence fleet.Fence, st fleet.ShardState) error {
	if err := fence.Check(); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st.Token, st.UpdatedAt = fence.Token, f.clock.Now()
	f.states[fence.Shard] = st
	return nil
}
