package fleet

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// A shard's owner key is created only if absent: a second node's
// transaction is refused while the first holds it, and a node that is not
// the shard's target does not try.
func TestOwnershipCAS(t *testing.T) {
	_, cli := newFleet(t, 4)
	ha := newHandler("a", nil)
	a := startNode(t, cli, "a", ha)
	waitFor(t, 10*time.Second, "a holds all 4 shards", func() bool { return len(ownedShards(a)) == 4 })

	hb := newHandler("b", nil)
	b := startNode(t, cli, "b", hb, func(o *NodeOptions) { o.Resync = time.Hour })
	// b tries to take a shard that stays a's, as a racing node would:
	// the transaction is refused.
	targets := Assign([]string{"a", "b"}, []string{"a", "a", "a", "a"}, 4)
	s := slices.Index(targets, "a")
	b.mu.Lock()
	lv := b.lease
	b.mu.Unlock()
	ctx := context.Background()
	if err := b.acquire(ctx, s, lv); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ownedShards(b), s) {
		t.Fatalf("b took shard %d while a holds it", s)
	}
	resp, err := cli.Get(ctx, shardKey(s, ownerLeaf))
	if err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	aLease := a.lease.id
	a.mu.Unlock()
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "a" || resp.Kvs[0].Lease != aLease {
		t.Fatalf("owner key %v, want a's, bound to a's lease %x", resp.Kvs, aLease)
	}
	// Eventually the shards are split two and two, each held once.
	waitFor(t, 15*time.Second, "shards split 2/2", func() bool {
		return len(ownedShards(a)) == 2 && len(ownedShards(b)) == 2
	})
	for _, s := range ownedShards(a) {
		if slices.Contains(ownedShards(b), s) {
			t.Errorf("shard %d held by both", s)
		}
	}
	// A node name is one live node's only.
	ctx2, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = StartNode(ctx2, cli, NodeOptions{Name: "a", Timing: fastTiming(), Handler: newHandler("a2", nil), JoinWait: 100 * time.Millisecond})
	var inUse *NameInUseError
	if !errors.As(err, &inUse) {
		t.Errorf("second node named a: %v, want NameInUseError", err)
	}
}

// A shard given up cleanly is taken again under a larger token, without
// the takeover wait, and with the previous owner's state and handoff.
func TestFencingTokenAndCleanHandoff(t *testing.T) {
	_, cli := newFleet(t, 1)
	h1 := newHandler("a", nil)
	a := startNode(t, cli, "a", h1, func(o *NodeOptions) { o.Timing.ResponseTimeout = time.Hour })
	// Owned lists a shard whose Start is still running (MaySend: ErrStarting).
	waitFor(t, 10*time.Second, "a holds shard 0", func() bool {
		return len(ownedShards(a)) == 1 && !errors.Is(a.MaySend(0), ErrStarting)
	})
	g1, _ := h1.grant(0)
	if g1.Handoff != nil || g1.Previous != nil {
		t.Errorf("first grant has a handoff %v or previous state %v", g1.Handoff, g1.Previous)
	}
	// Never owned before: the full takeover wait (an hour here).
	if err := a.MaySend(0); !errors.Is(err, ErrTakeoverWait) {
		t.Fatalf("MaySend right after taking: %v, want ErrTakeoverWait", err)
	}
	var nn *NotNowError
	if err := a.MaySend(0); !errors.As(err, &nn) || nn.Until.Sub(time.Now()) < 59*time.Minute {
		t.Errorf("takeover wait until %v", nn.Until)
	}
	if err := answered(t, func() error {
		return a.PutShardState(context.Background(), g1.Fence, ShardState{Backup: "file:///backups/0"})
	}); err != nil {
		t.Fatal(err)
	}
	// a leaves cleanly while still inside its wait: the handoff carries
	// the rest of that wait to the next owner.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := g1.Fence.Check(); err == nil {
		t.Error("a's fence still checks after it left")
	}
	h2 := newHandler("b", nil)
	b := startNode(t, cli, "b", h2)
	// Owned lists a shard before its Start has run: wait for the grant too.
	waitFor(t, 10*time.Second, "b holds shard 0, started", func() bool { return len(ownedShards(b)) == 1 && h2.current() == 1 })
	g2, _ := h2.grant(0)
	if g2.Token <= g1.Token {
		t.Errorf("token %d after %d: the fencing token must grow", g2.Token, g1.Token)
	}
	if g2.Handoff == nil || g2.Handoff.Token != g1.Token || g2.Handoff.Node != "a" {
		t.Fatalf("handoff %+v, want a's with token %d", g2.Handoff, g1.Token)
	}
	if g2.Previous == nil || g2.Previous.Backup != "file:///backups/0" || g2.Previous.Token != g1.Token {
		t.Errorf("previous state %+v", g2.Previous)
	}
	if wait := time.Until(g2.ReadyAt); wait < 50*time.Minute {
		t.Errorf("b may start in %v: a's unfinished takeover wait was not carried over", wait)
	}
	// A handoff is consumed by the take.
	resp, _ := cli.Get(context.Background(), shardKey(0, handoffLeaf))
	if len(resp.Kvs) != 0 {
		t.Error("handoff key left after the take")
	}

	// b releases cleanly with its sites quiet now: c may start at once.
	h2.quiet = 0
	b.mu.Lock()
	b.shards[0].grant.ReadyAt = time.Now() // as if b's wait had run out
	b.mu.Unlock()
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	h3 := newHandler("c", nil)
	c := startNode(t, cli, "c", h3)
	waitFor(t, 10*time.Second, "c may send for shard 0", func() bool { return c.MaySend(0) == nil })
	g3, _ := h3.grant(0)
	if g3.Token <= g2.Token || g3.Handoff == nil {
		t.Errorf("token %d after %d, handoff %v", g3.Token, g2.Token, g3.Handoff)
	}
	if err := g3.Fence.Check(); err != nil {
		t.Errorf("current fence: %v", err)
	}
	if err := g2.Fence.Check(); err == nil {
		t.Error("an old holding's fence still checks")
	}
	// A stale token cannot write the shard's state.
	if err := c.PutShardState(context.Background(), Fence{Shard: 0, Token: g2.Token, node: c}, ShardState{}); err == nil {
		t.Error("state written under a stale token")
	}
}

// A node that stops renewing (it crashed) loses its shards when its
// lease runs out; the next owner finds no handoff and waits the full
// takeover wait.
func TestLeaseExpiryReleasesShard(t *testing.T) {
	_, cli := newFleet(t, 2)
	ha := newHandler("a", nil)
	a := startNode(t, cli, "a", ha)
	waitFor(t, 10*time.Second, "a holds both shards, started", func() bool { return len(ownedShards(a)) == 2 && ha.current() == 2 })
	ga, _ := ha.grant(0)
	hb := newHandler("b", nil)
	b := startNode(t, cli, "b", hb)
	waitFor(t, 10*time.Second, "one shard each", func() bool { return len(ownedShards(b)) == 1 })
	crashed := time.Now()
	a.abandon()
	// Owned lists a shard as soon as it is taken, before its Start has
	// run (MaySend: ErrStarting, and no grant in hb yet): wait for both.
	var seen time.Time
	waitFor(t, 3*fastTiming().TTL, "b holds both shards, started", func() bool {
		seen = time.Now()
		if len(ownedShards(b)) != 2 || hb.started() != 2 {
			return false
		}
		for _, s := range ownedShards(b) {
			if errors.Is(b.MaySend(s), ErrStarting) {
				return false
			}
		}
		return true
	})
	took := seen.Sub(crashed)
	if took < fastTiming().TTL-fastTiming().Margin {
		t.Errorf("b took a's shard %v after a crashed: before a's lease could run out", took)
	}
	var taken Grant
	for _, g := range hb.allGrants() {
		if g.Shard != hb.allGrants()[0].Shard {
			taken = g
		}
	}
	if taken.Handoff != nil {
		t.Errorf("handoff %+v after a crash", taken.Handoff)
	}
	if taken.Token <= ga.Token {
		t.Errorf("token %d not above the crashed owner's %d", taken.Token, ga.Token)
	}
	// The full takeover wait from the take, which came before seen: a
	// second's allowance for this poll on a loaded machine still fails a
	// take with no wait (ready by seen) or half of it.
	wait := fastTiming().withDefaults().TakeoverWait()
	if early := seen.Add(wait - time.Second); taken.ReadyAt.Before(early) {
		t.Errorf("b may send for the shard it took from %v, before the takeover wait (%v) can have passed", taken.ReadyAt, wait)
	}
	// Asked at once, MaySend says wait; asked after ReadyAt (this
	// goroutine ran late), it may say yes.
	err := b.MaySend(taken.Shard)
	if asked := time.Now(); (err == nil && asked.Before(taken.ReadyAt)) || (err != nil && !errors.Is(err, ErrTakeoverWait)) {
		t.Errorf("MaySend at once after a takeover: %v", err)
	}
	waitFor(t, wait+time.Second, "b may send for both", func() bool { return len(readyShards(b)) == 2 })
}

// The deadline, with an injected clock: requests stop at the last
// successful renewal + TTL − margin while renewals fail, and resume, with
// no new takeover wait, once one succeeds again (the lease never ran out).
// If etcd says the lease is gone, the shards are dropped at once and
// taken again under a new lease with the full wait.
func TestDeadlineWithFakeClock(t *testing.T) {
	_, cli := newFleet(t, 2)
	clock := newFakeClock()
	leases := &cuttableLease{Lease: cli.Lease}
	attempts := make(chan error, 64)
	timing := Timing{TTL: 10 * time.Second, Margin: 2 * time.Second, ResponseTimeout: 30 * time.Second, ClockSkew: 250 * time.Millisecond}
	h := newHandler("a", nil)
	a := startNode(t, cli, "a", h, func(o *NodeOptions) {
		o.Clock, o.Timing, o.leases = clock, timing, leases
		o.onRenew = func(err error) { attempts <- err }
		o.Settle = -1 // takes at once, and its clock's waiters are the ones counted below (settle_test.go tests settling)
	})
	waitFor(t, 10*time.Second, "a started both shards", func() bool { return h.started() == 2 })
	g, _ := h.grant(0)
	takeover := timing.withDefaults().TakeoverWait()
	if !g.ReadyAt.Equal(clock.Now().Add(takeover)) {
		t.Fatalf("ReadyAt %v, want now + %v", g.ReadyAt, takeover)
	}
	// step advances the clock by d once the session loop waits on it, and
	// returns the renewal attempt that follows.
	step := func(d time.Duration) error {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		waiters := 2 // the session loop's timer and the resync ticker
		if clock.Now().Before(g.ReadyAt) {
			waiters += 2 // and each shard's wait for its ReadyAt
		}
		if err := clock.BlockUntilContext(ctx, waiters); err != nil {
			t.Fatalf("session loop not waiting: %v", err)
		}
		for len(attempts) > 0 { // attempts the clock set off before
			<-attempts
		}
		clock.Advance(d)
		select {
		case err := <-attempts:
			return err
		case <-ctx.Done():
			t.Fatal("no renewal attempt after the clock moved")
		}
		return nil
	}
	if err := <-attempts; err != nil { // the first renewal, right after joining
		t.Fatal(err)
	}
	every := timing.renewEvery()
	for elapsed := time.Duration(0); elapsed < takeover; elapsed += every {
		if err := a.MaySend(0); !errors.Is(err, ErrTakeoverWait) {
			t.Fatalf("at +%v inside the takeover wait: %v", elapsed, err)
		}
		if err := step(every); err != nil {
			t.Fatal(err)
		}
	}
	// Once the wait is over the node reads the shard's hold-offs again,
	// then lets requests start.
	waitFor(t, 5*time.Second, "a may send after the takeover wait", func() bool { return a.MaySend(0) == nil })
	if _, ok := h.readyHoldOffs(0); !ok {
		t.Error("MaySend says yes before Handler.Ready")
	}
	lastRenewal := clock.Now() // the last renewal was sent at this fake time
	leases.cut.Store(true)
	deadline := lastRenewal.Add(timing.TTL - timing.Margin)
	if got := a.Deadline(); !got.Equal(deadline) {
		t.Fatalf("Deadline %v, want %v", got, deadline)
	}
	if err := step(every); !errors.Is(err, errCut) {
		t.Fatalf("renewal while cut: %v", err)
	}
	for clock.Now().Add(timing.retryEvery()).Before(deadline) {
		if err := a.MaySend(0); err != nil {
			t.Fatalf("%v before the deadline: %v", deadline.Sub(clock.Now()), err)
		}
		step(timing.retryEvery())
	}
	// Just before the deadline requests may start; at it they may not.
	clock.Advance(deadline.Sub(clock.Now()) - time.Millisecond)
	if err := a.MaySend(0); err != nil {
		t.Fatalf("1ms before the deadline: %v", err)
	}
	if err := g.Fence.Check(); err != nil {
		t.Fatalf("fence 1ms before the deadline: %v", err)
	}
	clock.Advance(time.Millisecond)
	if err := a.MaySend(0); !errors.Is(err, ErrDeadline) {
		t.Fatalf("at the deadline: %v, want ErrDeadline", err)
	}
	if err := g.Fence.Check(); !errors.Is(err, ErrDeadline) {
		t.Fatalf("fence at the deadline: %v, want ErrDeadline", err)
	}
	if len(readyShards(a)) != 0 {
		t.Error("Owned says ready past the deadline")
	}
	step(timing.retryEvery())
	// etcd answers again: the same lease, the same tokens, no new wait.
	leases.cut.Store(false)
	if err := step(timing.retryEvery()); err != nil {
		t.Fatalf("renewal after the cut: %v", err)
	}
	if err := a.MaySend(0); err != nil {
		t.Fatalf("after a renewal got through again: %v", err)
	}
	if g2, _ := h.grant(0); g2.Token != g.Token || len(h.allGrants()) != 2 {
		t.Errorf("shard taken again (%d grants) after a lapse the lease survived", len(h.allGrants()))
	}
	// etcd revokes the lease: the shards are dropped at once, then taken
	// again under a new lease and token, with the full wait.
	a.mu.Lock()
	id := a.lease.id
	a.mu.Unlock()
	if _, err := cli.Revoke(context.Background(), clientv3.LeaseID(id)); err != nil {
		t.Fatal(err)
	}
	// The watch of nodes/ or the next renewal notices.
	step(every)
	waitFor(t, 5*time.Second, "both shards stopped as lost", func() bool { return h.lostStops() == 2 })
	if err := a.MaySend(0); !errors.Is(err, ErrNoSession) && !errors.Is(err, ErrNotOwner) {
		t.Fatalf("MaySend after the lease was revoked: %v", err)
	}
	// It rejoins and takes both again: the take is waited for in real
	// time after each step (up to a second: Start runs on its own
	// goroutine, and a 200 ms sleep was short on a loaded machine), and
	// the clock moves on only while nothing is taken, or ReadyAt below
	// would be from an earlier fake time.
	var before int64
	for _, g := range h.allGrants() {
		before = max(before, g.Token)
	}
	retaken := func() bool {
		n := 0
		for _, o := range a.Owned() {
			if o.Token > before {
				n++
			}
		}
		return n == 2
	}
	for i := 0; !retaken(); i++ {
		if i == 3 {
			t.Fatalf("shards not taken again: %d grants", h.started())
		}
		step(every)
		for wait := time.Now().Add(time.Second); !retaken() && time.Now().Before(wait); {
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor(t, 5*time.Second, "both shards started again", func() bool { return h.started() >= 4 })
	g3, _ := h.grant(0)
	if g3.Token <= g.Token || g3.Handoff != nil || !g3.ReadyAt.Equal(clock.Now().Add(takeover)) {
		t.Errorf("after a lost lease: token %d (was %d), handoff %v, ready in %v", g3.Token, g.Token, g3.Handoff, g3.ReadyAt.Sub(clock.Now()))
	}
}

// An owner key of this node that no holding stands behind (a release
// that failed, a take whose answer was lost) is dropped, and the shard
// taken again properly, rather than left stuck under a live lease.
func TestStrayOwnerKeyDropped(t *testing.T) {
	_, cli := newFleet(t, 2)
	h := newHandler("a", nil)
	a := startNode(t, cli, "a", h)
	waitFor(t, 10*time.Second, "a started both shards", func() bool { return h.current() == 2 })
	g, _ := h.grant(1)
	a.mu.Lock()
	hd := a.shards[1]
	a.finishLocked(hd, true) // the holding ends as lost...
	delete(a.shards, 1)      // ...while its key stays
	a.mu.Unlock()
	waitFor(t, 10*time.Second, "shard 1 taken again", func() bool { return len(h.allGrants()) == 3 })
	g2 := h.allGrants()[2]
	if g2.Shard != 1 || g2.Token <= g.Token || g2.Handoff != nil {
		t.Errorf("retaken %+v after token %d", g2, g.Token)
	}
}
