package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// watchKick turns changes under prefix into reconciles. It watches from
// the revision the node joined at, so that no change after the join is
// missed, and after a break from just after the last revision it saw
// (from now, with a full re-read, if etcd compacted that away). The
// watch asks for a leader, so that a member cut off from the others ends
// it rather than stay silent.
func (n *Node) watchKick(prefix string, from int64) {
	defer n.loops.Done()
	for n.ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(n.ctx))
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if from > 0 {
			opts = append(opts, clientv3.WithRev(from))
		}
		for resp := range n.cli.Watch(wctx, prefix, opts...) {
			if resp.CompactRevision != 0 {
				from = 0
			}
			if resp.Err() != nil {
				break
			}
			if resp.Header.Revision > 0 {
				from = resp.Header.Revision + 1
			}
			if len(resp.Events) > 0 {
				n.kick()
			}
			for _, ev := range resp.Events {
				if ev.Type == clientv3.EventTypePut {
					n.sawHoldOff(string(ev.Kv.Key), string(ev.Kv.Value))
				}
			}
		}
		cancel()
		n.kick() // something may have changed while the watch was down
		select {
		case <-n.ctx.Done():
			return
		case <-n.clock.After(time.Second):
		}
	}
}

func (n *Node) reconcileLoop() {
	defer n.loops.Done()
	tick := n.clock.NewTicker(n.o.Resync)
	defer tick.Stop()
	var lastErr string
	var retry <-chan time.Time // after a failed reconcile: try again soon
	var settle <-chan time.Time
	var settleAt time.Time // of the session the settle timer is for
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.kickc:
		case <-tick.Chan():
		case <-retry:
		case <-settle:
			settle = nil
		}
		retry = nil
		err := n.reconcile(n.ctx)
		// A session still settling: reconcile again the moment it has
		// (at once if that moment passed while this reconcile ran).
		n.mu.Lock()
		lv := n.lease
		n.mu.Unlock()
		if lv.id != 0 && !lv.settled && !lv.settleAt.Equal(settleAt) {
			settle, settleAt = n.clock.After(max(0, lv.settleAt.Sub(n.clock.Now()))), lv.settleAt
		}
		if err != nil && n.ctx.Err() == nil {
			if err.Error() != lastErr {
				n.log.Warn("fleet: cannot read or update the fleet's state; will retry", "err", err)
			}
			retry = n.clock.After(n.t.retryEvery())
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
	}
}

type ownerKV struct {
	node  string
	token int64
}

// reconcile reads the live nodes, shard owners and rebuild requests in
// one consistent read, gives up shards whose target is another node (or
// whose key is gone), takes unowned shards whose target is this node,
// and starts the exports asked of it.
func (n *Node) reconcile(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Txn(rctx).Then(
		clientv3.OpGet(nodesPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(shardsPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(requestsPrefix, clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return err
	}
	var live []string
	var mine *NodeInfo
	settling := map[string]bool{}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		name := strings.TrimPrefix(string(kv.Key), nodesPrefix)
		live = append(live, name)
		var info NodeInfo
		json.Unmarshal(kv.Value, &info)
		settling[name] = info.Settling
		if name == n.o.Name {
			info.Lease = fmt.Sprintf("%x", kv.Lease)
			mine = &info
		}
	}
	owners := map[int]ownerKV{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if s, leaf, ok := parseShardKey(string(kv.Key)); ok && leaf == ownerLeaf {
			owners[s] = ownerKV{node: string(kv.Value), token: kv.CreateRevision}
		}
	}
	requests := map[string]ExportRequest{}
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		var r ExportRequest
		if err := json.Unmarshal(kv.Value, &r); err == nil && r.ID != "" {
			requests[r.ID] = r
		}
	}

	n.mu.Lock()
	lv := n.lease
	if lv.id != 0 && resp.Header.Revision < lv.joinRev {
		// A read from before this session's join: read again.
		n.mu.Unlock()
		n.kick()
		return nil
	}
	if lv.id != 0 && (mine == nil || mine.Lease != fmt.Sprintf("%x", lv.id)) {
		// Our membership key is gone (or another lease holds our name):
		// our lease must have run out although no renewal said so yet.
		n.mu.Unlock()
		n.loseSession("the node's membership key is gone")
		return nil
	}
	current := make([]string, n.cfg.Shards)
	for s, o := range owners {
		if s < len(current) {
			current[s] = o.node
		}
	}
	targets := Assign(live, current, n.cfg.Shards)
	for s, h := range n.shards {
		if h.state == stopping {
			continue
		}
		o, ok := owners[s]
		switch {
		case !ok || o.token != h.grant.Token:
			n.log.Warn("shard lost: its owner key is gone or not ours", "shard", s, "token", h.grant.Token)
			n.finishLocked(h, true)
		case n.leaving || targets[s] != n.o.Name && !settling[targets[s]]:
			// (A shard whose target is a node still settling stays here
			// until that node has settled: NodeOptions.Settle.)
			n.log.Info("giving shard up", "shard", s, "to", targets[s])
			n.finishLocked(h, false)
		}
	}
	// Owner keys of ours that no holding stands behind: a release that
	// failed, or a take whose answer was lost. Delete them (the next owner
	// waits the full takeover wait: nothing says when their sites are quiet).
	type orphan struct {
		shard int
		token int64
	}
	var orphans []orphan
	for s, o := range owners {
		if o.node == n.o.Name && n.shards[s] == nil {
			orphans = append(orphans, orphan{s, o.token})
		}
	}
	var take []int
	now := n.clock.Now()
	settleNow := lv.id != 0 && !n.leaving && !lv.settled && !now.Before(lv.settleAt)
	if lv.id != 0 && !n.leaving && (lv.settled || settleNow) {
		for s, target := range targets {
			_, owned := owners[s]
			if target == n.o.Name && !owned && n.shards[s] == nil && !now.Before(n.backoff[s]) {
				take = append(take, s)
			}
		}
	}
	n.requests = requests
	n.mu.Unlock()
	if settleNow {
		if ok, err := n.settle(ctx, lv); err != nil || !ok {
			return err
		}
	}
	for _, o := range orphans {
		if err := n.dropOrphan(ctx, o.shard, o.token); err != nil {
			return err
		}
	}
	for _, s := range take {
		if err := n.acquire(ctx, s, lv); err != nil {
			return err
		}
	}
	n.startExports()
	if n.o.onReconcile != nil {
		n.o.onReconcile(resp.Header.Revision)
	}
	return nil
}

// dropOrphan deletes shard s's owner key if it is still the one with
// token (the transaction compares them: a key taken since is left alone).
func (n *Node) dropOrphan(ctx context.Context, s int, token int64) error {
	owner := shardKey(s, ownerLeaf)
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(owner), "=", token)).
		Then(clientv3.OpDelete(owner)).Commit()
	if err != nil {
		return fmt.Errorf("dropping shard %d's stray owner key: %w", s, err)
	}
	if resp.Succeeded {
		n.log.Warn("dropped a stray owner key of this node (a release that failed, or a take whose answer was lost)", "shard", s, "token", token)
	}
	return nil
}
