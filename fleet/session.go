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

// join grants a lease and claims nodes/<name> with it.
func (n *Node) join(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	sentAt := n.clock.Now()
	g, err := n.leases.Grant(rctx, n.t.ttlSeconds())
	if err != nil {
		return fmt.Errorf("fleet lease: %w", err)
	}
	info := n.info
	info.Lease = fmt.Sprintf("%x", int64(g.ID))
	info.Settling = n.o.Settle > 0
	raw, _ := json.Marshal(info)
	key := nodeKey(n.o.Name)
	resp, err := n.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(raw), clientv3.WithLease(g.ID))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil || !resp.Succeeded {
		n.leases.Revoke(rctx, g.ID)
	}
	if err != nil {
		return fmt.Errorf("fleet join: %w", err)
	}
	if !resp.Succeeded {
		e := &NameInUseError{Name: n.o.Name}
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			json.Unmarshal(kvs[0].Value, &e.Held)
		}
		return e
	}
	n.mu.Lock()
	n.lease = leaseView{id: int64(g.ID), sentAt: sentAt, ttl: time.Duration(g.TTL) * time.Second, joinRev: resp.Header.Revision,
		settleAt: sentAt.Add(n.o.Settle), settled: !info.Settling}
	n.lapsed = false
	n.mu.Unlock()
	n.m.sessionStarted()
	n.log.Info("joined the fleet", "fleet_id", n.cfg.FleetID, "shards", n.cfg.Shards, "lease", info.Lease, "ttl_s", g.TTL,
		"takes_shards_in", n.o.Settle.String())
	return nil
}

// settle rewrites the node's record without Settling, once the session
// lv has been a member for NodeOptions.Settle: the other nodes, which
// watch nodes/, then give up the shards the assignment gives it. The
// transaction compares the record's create revision with the join's, so
// that a record of another session is never overwritten. ok is false
// when the record is gone (the session with it: the next reconcile sees
// that).
func (n *Node) settle(ctx context.Context, lv leaseView) (ok bool, err error) {
	info := n.info
	info.Lease = fmt.Sprintf("%x", lv.id)
	raw, _ := json.Marshal(info)
	key := nodeKey(n.o.Name)
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", lv.joinRev)).
		Then(clientv3.OpPut(key, string(raw), clientv3.WithLease(clientv3.LeaseID(lv.id)))).Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		n.loseSession("the fleet lease ran out (the node's record could not be written with it)")
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("writing the node's record (settled): %w", err)
	}
	if !resp.Succeeded {
		n.kick()
		return false, nil
	}
	n.mu.Lock()
	if n.lease.id == lv.id {
		n.lease.settled = true
	}
	n.mu.Unlock()
	n.log.Info("settled: taking the shards the assignment gives this node")
	return true, nil
}

// sessionLoop keeps the lease alive. It does not use
// concurrency.Session, which hides when each renewal was sent: the
// deadline is counted from that moment.
func (n *Node) sessionLoop() {
	defer n.loops.Done()
	for {
		n.mu.Lock()
		lv, leaving := n.lease, n.leaving
		n.mu.Unlock()
		var err error
		wait := n.t.renewEvery()
		switch {
		case lv.id == 0 && leaving:
			wait = time.Hour // closing: nothing to keep alive
		case lv.id == 0:
			if err = n.join(n.ctx); err != nil {
				wait = time.Second
				n.log.Warn("cannot rejoin the fleet; retrying", "err", err)
			} else {
				n.kick()
			}
		default:
			if err = n.renew(lv); err != nil {
				wait = n.t.retryEvery()
			}
		}
		if n.onRenew != nil {
			n.onRenew(err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-n.clock.After(wait):
		}
	}
}

// renew sends one keep-alive for lease lv and records when it was sent.
func (n *Node) renew(lv leaseView) error {
	sentAt := n.clock.Now()
	rctx, cancel := context.WithTimeout(n.ctx, n.t.requestTimeout())
	resp, err := n.leases.KeepAliveOnce(rctx, clientv3.LeaseID(lv.id))
	cancel()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		n.m.renewal(false)
		n.loseSession("the fleet lease ran out (etcd revoked it)")
		return err
	}
	if err != nil {
		n.m.renewal(false)
		n.mu.Lock()
		first := !n.lapsed && !n.lease.valid(n.clock.Now(), n.t.Margin)
		if first {
			n.lapsed = true
		}
		n.mu.Unlock()
		if first {
			n.log.Warn("fleet lease not renewed in time: no requests until etcd answers again", "err", err)
		} else {
			n.log.Debug("fleet lease renewal failed", "err", err)
		}
		return err
	}
	n.m.renewal(true)
	n.mu.Lock()
	resumed := n.lapsed
	if n.lease.id == lv.id {
		n.lease.sentAt, n.lease.ttl = sentAt, time.Duration(resp.TTL)*time.Second
		n.lapsed = false
	}
	n.mu.Unlock()
	if resumed {
		n.log.Info("fleet lease renewed again: requests resume")
		n.kick()
	}
	return nil
}

// loseSession drops the lease and every shard (their keys went with it).
func (n *Node) loseSession(why string) {
	n.mu.Lock()
	if n.lease.id == 0 {
		n.mu.Unlock()
		return
	}
	n.lease = leaseView{}
	for _, h := range n.shards {
		n.finishLocked(h, true)
	}
	n.mu.Unlock()
	n.log.Warn(why + ": its shards are dropped; rejoining")
}
