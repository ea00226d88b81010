package crawl

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"sync"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
)

// FleetGate is what a crawl node asks of its fleet membership before each
// request (fleet.Gate, which *fleet.Node and fleettest.Fake implement):
// the crawl does not import the fleet's etcd client.
type FleetGate interface {
	// MaySend: nil when a request for a shard's sites may start now.
	MaySend(shard int) error
	// ReserveIP takes the next start on an address shared by several
	// sites (--ip-delay), fleet-wide: wait until the time it returns.
	ReserveIP(ctx context.Context, ip netip.Addr, delay time.Duration) (time.Time, error)
	// HoldOff records, fleet-wide, that domain (of shard) asked to be
	// left alone until then (a 429 or 503, a block), so that the shard's
	// next owner waits too even if this node dies before its store moves.
	// It is called whether or not the node still holds the shard (the
	// visit may have ended after its deadline); an error means the fleet
	// could not record it now (it may keep it and record it later).
	HoldOff(ctx context.Context, shard int, domain string, until time.Time) error
}

// Fleet is the crawl's side of a fleet node (DESIGN.md, "Fleet
// coordination"): the loop visits only domains of the shards Open made
// workable, asks Gate.MaySend right before every request of a shard's
// site, and Close ends a shard's visits. The node's fleet.Handler (in
// cmd/mapthenet) calls Open from Start and Close from Stop.
//
// In fleet mode a domain found by a visit is not visited in the same run
// (it may be another node's): it is recorded as a link target, and the
// next rebuild's schedule lists it for its shard's owner.
type Fleet struct {
	gate  FleetGate
	route func(domain string) int

	mu     sync.Mutex
	shards map[int]*shardWork
	// replaced are shards opened with a store copy other than the one
	// this run's visits went to (restored from a backup): the loop
	// forgets which of their domains it visited.
	replaced map[int]bool
	// holdUntil: domains that asked to be left alone until then (from
	// Open's hold-offs, and this node's own visits).
	holdUntil map[string]time.Time
	wake      chan struct{}
}

// shardWork is one shard the crawl may work on.
type shardWork struct {
	ctx    context.Context // ends when the shard is closed
	cancel context.CancelFunc
	visits sync.WaitGroup
	quiet  time.Time // the latest request end, or start + its site's gap
	closed bool      // Close runs: no new visit
}

// NewFleet makes the crawl's side of a node whose gate is gate, with the
// store's routing of domains to shards.
func NewFleet(gate FleetGate, route func(domain string) int) *Fleet {
	return &Fleet{gate: gate, route: route, shards: map[int]*shardWork{}, replaced: map[int]bool{}, holdUntil: map[string]time.Time{}, wake: make(chan struct{}, 1)}
}

// Open lets the crawl visit shard's domains (once MaySend agrees).
// replaced: the shard's store was replaced (restored from a backup) since
// this run last worked it, so the visits this run made of its domains may
// not be in it: they are made again where the schedule or seeds say so.
//
// holdOff are the shard's sites that asked a node to wait, and until when
// (fleet.Grant.HoldOff): none of them is visited before.
func (f *Fleet) Open(shard int, replaced bool, holdOff map[string]time.Time) {
	f.mu.Lock()
	if replaced {
		f.replaced[shard] = true
	}
	for d, t := range holdOff {
		if t.After(f.holdUntil[d]) {
			f.holdUntil[d] = t
		}
	}
	if f.shards[shard] == nil {
		w := &shardWork{}
		w.ctx, w.cancel = context.WithCancel(context.Background())
		f.shards[shard] = w
	}
	f.mu.Unlock()
	f.Wake()
}

// HoldOffs adds hold-offs of shard's sites (fleet.Handler.Ready's, read
// again after the takeover wait): none of them is visited before its time.
func (f *Fleet) HoldOffs(shard int, holdOff map[string]time.Time) {
	f.mu.Lock()
	for d, t := range holdOff {
		if t.After(f.holdUntil[d]) {
			f.holdUntil[d] = t
		}
	}
	f.mu.Unlock()
	f.Wake()
}

// Close stops shard's work: no new visit of its domains starts, the
// visits in flight are abandoned (not recorded), and Close returns once
// none is left, with the time before which its sites must stay quiet (the
// zero time when nothing was sent).
func (f *Fleet) Close(shard int) time.Time {
	f.mu.Lock()
	w := f.shards[shard]
	if w != nil {
		w.closed = true
	}
	f.mu.Unlock()
	if w == nil {
		return time.Time{}
	}
	w.cancel()
	w.visits.Wait()
	f.mu.Lock()
	delete(f.shards, shard)
	quiet := w.quiet
	f.mu.Unlock()
	f.Wake()
	return quiet
}

// Wake makes the loop look at the shards again (one opened, closed, or
// became ready).
func (f *Fleet) Wake() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// Owned lists the shards open now.
func (f *Fleet) Owned() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]int, 0, len(f.shards))
	for s, w := range f.shards {
		if !w.closed {
			out = append(out, s)
		}
	}
	return out
}

// takeReplaced returns and clears the shards replaced since the last call.
func (f *Fleet) takeReplaced() map[int]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.replaced) == 0 {
		return nil
	}
	r := f.replaced
	f.replaced = map[int]bool{}
	return r
}

// ready reports whether a visit of domain may start now: its shard is
// open and the gate lets requests for it start.
func (f *Fleet) ready(domain string, now time.Time) bool {
	s := f.route(domain)
	f.mu.Lock()
	w := f.shards[s]
	open := w != nil && !w.closed
	if until, ok := f.holdUntil[domain]; ok {
		if now.Before(until) {
			open = false
		} else {
			delete(f.holdUntil, domain)
		}
	}
	f.mu.Unlock()
	return open && f.gate.MaySend(s) == nil
}

// visited tells the fleet how a visit ended: a site that asked to be left
// alone (throttled, blocked) is recorded as a hold-off at once, fleet-wide.
func (f *Fleet) visited(ctx context.Context, res *data.VisitResult, log *slog.Logger) {
	if res == nil || (res.Outcome != data.OutcomeThrottled && res.Outcome != data.OutcomeBotProtection) {
		return
	}
	until := res.FinishedAt.Add(schedule.Backoff(res.Outcome, 1, res.RetryAfter))
	f.mu.Lock()
	if until.After(f.holdUntil[res.Domain]) {
		f.holdUntil[res.Domain] = until
	}
	f.mu.Unlock()
	if err := f.gate.HoldOff(context.WithoutCancel(ctx), f.route(res.Domain), res.Domain, until); err != nil {
		log.Warn("a site's wait not recorded in the fleet yet", "domain", res.Domain, "until", until, "err", err)
	}
}

// begin registers a visit of domain with its shard: ctx ends when ctx or
// the shard's work ends; end must be called when the visit returns. ok is
// false when the shard is not open.
func (f *Fleet) begin(ctx context.Context, domain string) (vctx context.Context, end func(), ok bool) {
	s := f.route(domain)
	f.mu.Lock()
	w := f.shards[s]
	if w == nil || w.closed {
		f.mu.Unlock()
		return nil, nil, false
	}
	w.visits.Add(1)
	f.mu.Unlock()
	vctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(w.ctx, cancel)
	return vctx, func() { stop(); cancel(); w.visits.Done() }, true
}

// errNotNow wraps the gate's refusal: the visit is abandoned, and tried
// again when the shard is ready (or by its next owner).
var errNotNow = errors.New("crawl: the fleet does not let this shard's requests start now")

// gateRequest is the last step before a request of site domain to u's
// address ip ("" unknown) is sent: the shared IP pace (--ip-delay) and
// MaySend. An error abandons the visit.
func (f *Fleet) gateRequest(ctx context.Context, v *visit, ip string) error {
	s := f.route(v.domain)
	if v.c.opts.IPDelay > 0 && ip != "" {
		if addr, err := netip.ParseAddr(ip); err == nil {
			at, err := f.gate.ReserveIP(ctx, addr.Unmap(), v.c.opts.IPDelay)
			if err != nil {
				return fmt.Errorf("%w: shared IP pace: %w", errNotNow, err)
			}
			if d := at.Sub(v.c.opts.Clock.Now()); d > 0 {
				t := v.c.opts.Clock.NewTimer(d)
				select {
				case <-t.Chan():
				case <-ctx.Done():
					t.Stop()
					return ctx.Err()
				}
			}
		}
	}
	if err := f.gate.MaySend(s); err != nil {
		return fmt.Errorf("%w: %w", errNotNow, err)
	}
	return nil
}

// sent notes a request of domain's site that started at start and ended
// at end, with gap its site's pace: the shard's quiet time.
func (f *Fleet) sent(domain string, start, end time.Time, gap time.Duration) {
	q := start.Add(gap)
	if end.After(q) {
		q = end
	}
	s := f.route(domain)
	f.mu.Lock()
	if w := f.shards[s]; w != nil && q.After(w.quiet) {
		w.quiet = q
	}
	f.mu.Unlock()
}
