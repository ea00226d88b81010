package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// acquire takes shard s if it has no owner: one transaction creates the
// owner key with the node's lease (its create revision is the fencing
// token), consumes the previous owner's handoff and reads the shard's
// state.
func (n *Node) acquire(ctx context.Context, s int, lv leaseView) error {
	owner := shardKey(s, ownerLeaf)
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(owner), "=", 0)).
		Then(
			clientv3.OpPut(owner, n.o.Name, clientv3.WithLease(clientv3.LeaseID(lv.id))),
			clientv3.OpDelete(shardKey(s, handoffLeaf), clientv3.WithPrevKV()),
			clientv3.OpGet(shardKey(s, stateLeaf)),
			clientv3.OpGet(shardKey(s, holdOffLeaf), clientv3.WithPrefix()),
		).Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		n.loseSession("the fleet lease ran out (a shard could not be taken with it)")
		return nil
	}
	if err != nil {
		return fmt.Errorf("taking shard %d: %w", s, err)
	}
	if !resp.Succeeded {
		return nil // another node was quicker; the next reconcile sees it
	}
	now := n.clock.Now()
	g := Grant{Shard: s, Token: resp.Header.Revision}
	if prev := resp.Responses[1].GetResponseDeleteRange().PrevKvs; len(prev) == 1 {
		var h Handoff
		if json.Unmarshal(prev[0].Value, &h) == nil {
			g.Handoff = &h
		}
	}
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) == 1 {
		var st ShardState
		if json.Unmarshal(kvs[0].Value, &st) == nil {
			g.Previous = &st
		}
	}
	var holds []kvPair
	for _, kv := range resp.Responses[3].GetResponseRange().Kvs {
		holds = append(holds, kvPair{string(kv.Key), string(kv.Value)})
	}
	g.HoldOff = parseHoldOffs(s, holds)
	wait := n.t.TakeoverWait()
	if g.Handoff != nil {
		wait = max(0, g.Handoff.QuietUntil.Add(n.t.ClockSkew).Sub(now))
	}
	g.ReadyAt = now.Add(wait)
	g.Fence = Fence{Shard: s, Token: g.Token, node: n}
	h := &held{grant: g, end: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancel(n.ctx)
	n.mu.Lock()
	if n.lease.id != lv.id || n.leaving {
		// The lease went while the transaction ran: the key goes with it.
		n.mu.Unlock()
		h.cancel()
		return nil
	}
	n.shards[s] = h
	n.holds.Add(1)
	n.mu.Unlock()
	n.m.shardChange("acquired")
	n.log.Info("took shard", "shard", s, "token", g.Token, "clean_handoff", g.Handoff != nil, "first_request_in", wait.Round(time.Millisecond).String())
	go n.hold(h)
	return nil
}

// hold runs one holding of a shard: Start, serve until asked to end,
// Stop, release.
func (n *Node) hold(h *held) {
	defer n.holds.Done()
	defer h.cancel()
	s := h.grant.Shard
	err := n.o.Handler.Start(h.ctx, h.grant)
	n.mu.Lock()
	if err == nil && h.state == starting {
		h.state = active
		n.kick() // exports may be waiting for it
	}
	if err != nil {
		n.backoff[s] = n.clock.Now().Add(n.o.StartRetry)
		n.finishLocked(h, h.lost)
	}
	n.mu.Unlock()
	var quiet time.Time
	if err != nil {
		n.log.Error("could not start shard: giving it up for a while", "shard", s, "err", err, "retry_in", n.o.StartRetry.String())
		quiet = h.grant.ReadyAt // no request was sent; the previous owner's quiet time still holds
	} else {
		ready := make(chan struct{})
		go func() { defer close(ready); n.makeReady(h) }()
		<-h.end
		h.cancel()
		<-ready
		h.cancel()
		h.exports.Wait()
		quiet = n.o.Handler.Stop(s, h.lost)
	}
	if !h.lost {
		n.release(h, quiet)
	}
	n.mu.Lock()
	if n.shards[s] == h {
		delete(n.shards, s)
	}
	n.mu.Unlock()
	if h.lost {
		n.m.shardChange("lost")
	} else {
		n.m.shardChange("released")
	}
	n.kick()
}

// makeReady waits for h's ReadyAt, reads the shard's hold-offs again
// (retrying until etcd answers or the holding ends) and hands them to
// Handler.Ready, which lets requests start.
func (n *Node) makeReady(h *held) {
	s := h.grant.Shard
	n.mu.Lock()
	wait := h.grant.ReadyAt.Sub(n.clock.Now())
	n.mu.Unlock()
	select {
	case <-h.ctx.Done():
		return
	case <-n.clock.After(max(0, wait)):
	}
	for {
		holds, err := n.readHoldOffs(h.ctx, s)
		if err == nil {
			n.mu.Lock()
			if h.state == active {
				n.o.Handler.Ready(s, holds)
				h.ready = true
			}
			n.mu.Unlock()
			n.log.Debug("shard ready", "shard", s, "hold_offs", len(holds))
			return
		}
		n.log.Debug("shard's hold-offs not read: no request until they are", "shard", s, "err", err)
		select {
		case <-h.ctx.Done():
			return
		case <-n.clock.After(n.t.retryEvery()):
		}
	}
}

// release deletes the owner key, if it is still this holding's, and
// leaves a handoff saying until when the shard's sites must stay quiet
// (none when quiet is zero: the next owner then waits the full takeover
// wait). It retries for up to a TTL: after that the lease may be gone
// and the key with it.
func (n *Node) release(h *held, quiet time.Time) {
	s, token := h.grant.Shard, h.grant.Token
	owner := shardKey(s, ownerLeaf)
	ops := []clientv3.Op{clientv3.OpDelete(owner)}
	if !quiet.IsZero() {
		if quiet.Before(h.grant.ReadyAt) {
			quiet = h.grant.ReadyAt
		}
		raw, _ := json.Marshal(Handoff{Token: token, Node: n.o.Name, ReleasedAt: wall(n.clock.Now()), QuietUntil: wall(quiet)})
		ops = append(ops, clientv3.OpPut(shardKey(s, handoffLeaf), string(raw)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.t.TTL)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, n.t.requestTimeout())
		resp, err := n.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(owner), "=", token)).
			Then(ops...).Commit()
		rcancel()
		if err == nil {
			if resp.Succeeded {
				n.log.Info("released shard", "shard", s, "token", token, "clean_handoff", !quiet.IsZero())
			}
			return
		}
		if ctx.Err() != nil {
			n.log.Warn("could not release shard: its key runs out with the lease", "shard", s, "err", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-n.clock.After(n.t.retryEvery()):
		}
	}
}

// MaySend reports whether a request for shard may start now: nil, or a
// *NotNowError saying why not (wrapping ErrDeadline, ErrNotOwner,
// ErrTakeoverWait, ...) and, when known, until when. The crawl asks it
// before every request of the shard's sites; it reads only local state.
func (n *Node) MaySend(shard int) error {
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.leaseOKLocked(shard, now); err != nil {
		return err
	}
	h := n.shards[shard]
	switch {
	case h == nil:
		return &NotNowError{Shard: shard, Err: ErrNotOwner}
	case h.state == starting:
		return &NotNowError{Shard: shard, Err: ErrStarting}
	case h.state == stopping:
		return &NotNowError{Shard: shard, Err: ErrStopping}
	case now.Before(h.grant.ReadyAt) || !h.ready:
		return &NotNowError{Shard: shard, Err: ErrTakeoverWait, Until: h.grant.ReadyAt}
	}
	return nil
}

func (n *Node) leaseOKLocked(shard int, now time.Time) error {
	if n.lease.id == 0 {
		return &NotNowError{Shard: shard, Err: ErrNoSession}
	}
	if !n.lease.valid(now, n.t.Margin) {
		return &NotNowError{Shard: shard, Err: ErrDeadline}
	}
	return nil
}

// Deadline is the local clock time until which the node may assume it
// holds its lease (zero without one). Requests stop there.
func (n *Node) Deadline() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lease.deadline(n.t.Margin)
}

// Owned lists the shards this node holds, in shard order, with their
// tokens and whether requests may start now.
func (n *Node) Owned() []OwnedShard {
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	valid := n.lease.valid(now, n.t.Margin)
	out := make([]OwnedShard, 0, len(n.shards))
	for s := 0; s < n.cfg.Shards; s++ {
		h := n.shards[s]
		if h == nil {
			continue
		}
		out = append(out, OwnedShard{Shard: s, Token: h.grant.Token, ReadyAt: h.grant.ReadyAt,
			Ready: valid && h.state == active && h.ready && !now.Before(h.grant.ReadyAt)})
	}
	return out
}

// OwnedShard is one entry of Node.Owned.
type OwnedShard struct {
	Shard   int
	Token   int64
	ReadyAt time.Time
	Ready   bool // MaySend would say yes now
}

// Fence is one holding's fencing token and its check. The shard's store
// records Token when the holding starts and calls Check before every
// commit: a commit goes ahead only while the holding is current and the
// node's lease deadline has not passed, so a node that lost a shard (or
// may have: its lease could have run out) writes nothing more to it.
type Fence struct {
	Shard int
	Token int64
	node  *Node
	check func() error
}

// NewFence makes a fence that checks with check (fakes and tests).
func NewFence(shard int, token int64, check func() error) Fence {
	return Fence{Shard: shard, Token: token, check: check}
}

// Check returns nil while a commit under this fence may go ahead, else a
// *NotNowError. It reads only local state (no round trip to etcd).
func (f Fence) Check() error { return f.checkHolding(false) }

// CheckHeld is Check, except that it passes while the holding is being
// given up (Handler.Stop runs): the node still holds the owner key and
// its lease, so the shard's last commits and its last backup's state may
// still be written then. The store of a shard whose Stop writes (the
// crawl's: the visits it finished, then a backup for the next owner)
// uses it as its fence.
func (f Fence) CheckHeld() error { return f.checkHolding(true) }

// checkHolding is Check (givingUp false) and CheckHeld (true: a holding
// being given up passes).
func (f Fence) checkHolding(givingUp bool) error {
	if f.check != nil {
		return f.check()
	}
	if f.node == nil {
		return &NotNowError{Shard: f.Shard, Err: ErrNotOwner}
	}
	n := f.node
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.leaseOKLocked(f.Shard, now); err != nil {
		return err
	}
	h := n.shards[f.Shard]
	switch {
	case h == nil || h.grant.Token != f.Token || givingUp && h.lost:
		return &NotNowError{Shard: f.Shard, Err: ErrTokenChanged}
	case !givingUp && h.state == stopping:
		return &NotNowError{Shard: f.Shard, Err: ErrStopping}
	}
	return nil
}
