package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// ExportRecord is shards/<NNNN>/export: the shard's last part exported
// for a fleet rebuild.
type ExportRecord struct {
	ID    string    `json:"id"`
	Token int64     `json:"token"`
	Node  string    `json:"node"`
	Part  Part      `json:"part"`
	At    time.Time `json:"at"`
}

// startExports starts, for every open rebuild request, the export of each
// shard this node holds and has not answered yet under its current token.
func (n *Node) startExports() {
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	for key := range n.answered {
		if _, open := n.requests[key.id]; !open {
			delete(n.answered, key)
		}
	}
	for _, r := range n.requests {
		if !r.Deadline.IsZero() && now.After(r.Deadline.Add(n.t.ClockSkew)) {
			continue
		}
		for s, h := range n.shards {
			k := answerKeyT{id: r.ID, shard: s, token: h.grant.Token}
			if h.state != active || n.answered[k] || s >= r.Shards {
				continue
			}
			n.answered[k] = true
			h.exports.Add(1) // before h can stop: finishLocked needs n.mu too
			go n.export(h, r)
		}
	}
}

// export runs Handler.Export for one shard and answers the request, in a
// transaction that succeeds only while this holding's owner key stands
// (a node that lost the shard cannot answer for it).
func (n *Node) export(h *held, r ExportRequest) {
	defer h.exports.Done()
	s, token := h.grant.Shard, h.grant.Token
	select {
	case n.exportSem <- struct{}{}:
		defer func() { <-n.exportSem }()
	case <-h.ctx.Done():
		return
	}
	n.log.Info("exporting shard for a fleet rebuild", "rebuild", r.ID, "shard", s)
	part, err := n.o.Handler.Export(h.ctx, r, h.grant.Fence)
	if err != nil && h.ctx.Err() != nil {
		// The shard is being given up: its next owner answers.
		return
	}
	a := ExportAnswer{ID: r.ID, Shard: s, Token: token, Node: n.o.Name, Status: AnswerExported, Part: part, At: wall(n.clock.Now())}
	if err != nil {
		a.Status, a.Error, a.Part = AnswerFailed, err.Error(), Part{}
		n.log.Error("shard export failed: the fleet rebuild fails", "rebuild", r.ID, "shard", s, "err", err)
	}
	raw, _ := json.Marshal(a)
	ops := []clientv3.Op{clientv3.OpPut(answerKey(r.ID, s), string(raw), clientv3.WithLease(clientv3.LeaseID(r.Lease)))}
	if err == nil {
		rec, _ := json.Marshal(ExportRecord{ID: r.ID, Token: token, Node: n.o.Name, Part: part, At: a.At})
		ops = append(ops, clientv3.OpPut(shardKey(s, exportLeaf), string(rec)))
	}
	ctx, cancel := context.WithTimeout(h.ctx, n.t.requestTimeout())
	defer cancel()
	resp, terr := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(shardKey(s, ownerLeaf)), "=", token)).
		Then(ops...).Commit()
	switch {
	case terr != nil:
		n.log.Warn("could not answer a fleet rebuild", "rebuild", r.ID, "shard", s, "err", terr)
		n.m.export("unanswered")
	case !resp.Succeeded:
		n.log.Warn("shard moved before its export was answered", "rebuild", r.ID, "shard", s)
		n.m.export("unanswered")
	case err != nil:
		n.m.export(AnswerFailed)
	default:
		n.m.export(AnswerExported)
	}
}

// PutShardState writes the shard's state (its backup's location: what
// the next owner and fleet status read) under holding f: it
// succeeds only while f's token is the shard's owner key (Stop may write
// it: Fence.CheckHeld). Token, Node and
// UpdatedAt are filled in.
func (n *Node) PutShardState(ctx context.Context, f Fence, st ShardState) error {
	if err := f.CheckHeld(); err != nil {
		return err
	}
	st.Token, st.Node, st.UpdatedAt = f.Token, n.o.Name, wall(n.clock.Now())
	raw, _ := json.Marshal(st)
	ctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(shardKey(f.Shard, ownerLeaf)), "=", f.Token)).
		Then(clientv3.OpPut(shardKey(f.Shard, stateLeaf), string(raw))).Commit()
	if err != nil {
		return fmt.Errorf("shard %d state: %w", f.Shard, err)
	}
	if !resp.Succeeded {
		return &NotNowError{Shard: f.Shard, Err: ErrTokenChanged}
	}
	return nil
}

// ShardState is shards/<NNNN>/state, written by the shard's owner
// (PutShardState) and read by the next owner (Grant.Previous) and fleet
// status.
type ShardState struct {
	Token     int64     `json:"token"`
	Node      string    `json:"node"`
	UpdatedAt time.Time `json:"updated_at"`
	// Backup is where the shard store's latest backup is (the snapshot
	// store's URI); empty: none yet.
	Backup   string     `json:"backup,omitempty"`
	BackupAt *time.Time `json:"backup_at,omitempty"`
}

// ShardCounts is shards/<NNNN>/counts: how much of the shard's schedule
// its owner has still to visit, as it last counted (every minute;
// fleet status shows them). A key of its own, not part of state, so that
// a count never replaces the backup location the next owner restores.
type ShardCounts struct {
	Token int64  `json:"token"`
	Node  string `json:"node"`
	// At is the time counted as of: the crawl's now (its --now moved on
	// by the time it has run, or the clock).
	At time.Time `json:"at"`
	// Snapshot is the schedule's snapshot id ("": none pulled yet).
	Snapshot string `json:"snapshot"`
	// Due are the shard's schedule rows due at At, of domains visited
	// before, not visited since the snapshot; Waiting, the domains never
	// visited that are due (new in the schedule) or seeds of this run.
	Due     int64 `json:"due"`
	Waiting int64 `json:"waiting"`
}

// PutShardCounts writes the shard's counts under holding f, in a
// transaction that succeeds only while f's token is the owner key's
// create revision. Token and Node are filled in, and At if zero.
func (n *Node) PutShardCounts(ctx context.Context, f Fence, c ShardCounts) error {
	if err := f.Check(); err != nil {
		return err
	}
	c.Token, c.Node = f.Token, n.o.Name
	if c.At.IsZero() {
		c.At = wall(n.clock.Now())
	}
	raw, _ := json.Marshal(c)
	ctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(shardKey(f.Shard, ownerLeaf)), "=", f.Token)).
		Then(clientv3.OpPut(shardKey(f.Shard, countsLeaf), string(raw))).Commit()
	if err != nil {
		return fmt.Errorf("shard %d counts: %w", f.Shard, err)
	}
	if !resp.Succeeded {
		return &NotNowError{Shard: f.Shard, Err: ErrTokenChanged}
	}
	return nil
}
