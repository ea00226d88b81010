package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// holdOffLeaf is shards/<NNNN>/holdoff/<domain>: a site of the shard that
// asked a node to wait (a 429 or 503, a bot-protection block), with the
// time until which it must not be asked again, unix ms (decimal text). It
// is bound to a lease of its own that runs out then (+ the clock skew).
//
// A node writes it as soon as the visit ends, before the visit reaches
// its store, so that the next owner honours the wait even when this node
// dies before its store moves (a kill -9: the next owner restores the
// last backup, which does not hold that visit). It needs no holding of
// the shard: a site's wait is a fact whoever learnt it, and the visit
// that learnt it may have ended after the node's deadline (its commit
// then refused) or after the shard moved. The write only ever extends a
// hold-off: a later time already there stays.
//
// When etcd does not answer (no quorum, the node cut off from it) the
// hold-off stays pending on the node, in its memory and in
// NodeOptions.HoldOffFile, and is written as soon as etcd answers again,
// whether or not the node still holds the shard (holdOffLoop). The
// shard's next owner reads the hold-offs when it takes the shard and again
// once its takeover wait is over, right before its first request
// (Handler.Ready): a node cut off from etcd that reaches it again within
// that wait (TTL + response timeout + skew after its lease ran out) has
// its pending hold-offs honoured by the next owner.
const holdOffLeaf = "holdoff/"

// ErrHoldOffPending: a hold-off could not be written to etcd now; the
// node keeps it and writes it as soon as etcd answers.
var ErrHoldOffPending = errors.New("etcd did not take it: kept by this node and written as soon as etcd answers again")

// holdOffKey is one pending hold-off.
type holdOffKey struct {
	shard  int
	domain string
}

// PutHoldOff records, fleet-wide, that domain (of shard) must not be
// visited before until. It writes at once when the node's lease is valid
// and etcd answers; otherwise it keeps the hold-off pending and returns
// an error wrapping ErrHoldOffPending (see holdOffLeaf).
func (n *Node) PutHoldOff(ctx context.Context, shard int, domain string, until time.Time) error {
	if domain == "" || strings.ContainsAny(domain, "/ \t\n") {
		return fmt.Errorf("hold-off of %q: not a domain", domain)
	}
	if shard < 0 || shard >= n.cfg.Shards {
		return fmt.Errorf("hold-off of %s: shard %d out of range (the fleet has %d)", domain, shard, n.cfg.Shards)
	}
	until = wall(until)
	now := n.clock.Now()
	if !until.After(now) {
		return nil
	}
	n.mu.Lock()
	valid := n.lease.valid(now, n.t.Margin)
	n.mu.Unlock()
	if valid {
		rctx, cancel := context.WithTimeout(ctx, 2*n.t.requestTimeout())
		err := n.writeHoldOff(rctx, shard, domain, until)
		cancel()
		if err == nil {
			return nil
		}
		n.log.Debug("hold-off not written", "shard", shard, "domain", domain, "err", err)
	}
	n.addPending(map[holdOffKey]time.Time{{shard, domain}: until})
	return fmt.Errorf("shard %d hold-off of %s until %s: %w", shard, domain, until.Format(time.RFC3339), ErrHoldOffPending)
}

// writeHoldOff writes shard's hold-off of domain until until unless a
// later one is there: a compare-and-swap on the key's mod revision (or
// its absence), retried on a conflict, so that it never shortens another
// node's hold-off written meanwhile.
func (n *Node) writeHoldOff(ctx context.Context, shard int, domain string, until time.Time) error {
	ttl := until.Sub(n.clock.Now()) + n.t.ClockSkew
	if ttl <= 0 {
		return nil
	}
	lease, err := n.cli.Grant(ctx, max(int64((ttl+time.Second-1)/time.Second), 2))
	if err != nil {
		return fmt.Errorf("shard %d hold-off: %w", shard, err)
	}
	key := shardKey(shard, holdOffLeaf+domain)
	value := strconv.FormatInt(until.UnixMilli(), 10)
	cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", 0) // first guess: none there
	for range 10 {
		resp, err := n.cli.Txn(ctx).If(cmp).
			Then(clientv3.OpPut(key, value, clientv3.WithLease(lease.ID))).
			Else(clientv3.OpGet(key)).Commit()
		if err != nil {
			n.revoke(lease.ID)
			return fmt.Errorf("shard %d hold-off: %w", shard, err)
		}
		if resp.Succeeded {
			return nil
		}
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			cmp = clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
			continue
		}
		if ms, err := strconv.ParseInt(string(kvs[0].Value), 10, 64); err == nil && ms >= until.UnixMilli() {
			n.revoke(lease.ID) // a hold-off as long or longer is there
			return nil
		}
		cmp = clientv3.Compare(clientv3.ModRevision(key), "=", kvs[0].ModRevision)
	}
	n.revoke(lease.ID)
	return fmt.Errorf("shard %d hold-off of %s: the key kept changing", shard, domain)
}

// revoke revokes a lease no key was put with (best effort: else it runs
// out by itself).
func (n *Node) revoke(id clientv3.LeaseID) {
	ctx, cancel := context.WithTimeout(context.Background(), n.t.requestTimeout())
	n.cli.Revoke(ctx, id)
	cancel()
}

// readHoldOffs reads shard's hold-offs from etcd.
func (n *Node) readHoldOffs(ctx context.Context, shard int) (map[string]time.Time, error) {
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Get(rctx, shardKey(shard, holdOffLeaf), clientv3.WithPrefix())
	if err != nil {
		return nil, fmt.Errorf("shard %d: reading its hold-offs: %w", shard, err)
	}
	var holds []kvPair
	for _, kv := range resp.Kvs {
		holds = append(holds, kvPair{string(kv.Key), string(kv.Value)})
	}
	return parseHoldOffs(shard, holds), nil
}

// sawHoldOff hands a hold-off written to etcd (a watch event: another
// node's, maybe one that reached etcd only after this node's takeover
// wait) to the handler of a shard this node holds and works.
func (n *Node) sawHoldOff(key, value string) {
	s, leaf, ok := parseShardKey(key)
	if !ok || !strings.HasPrefix(leaf, holdOffLeaf) {
		return
	}
	holds := parseHoldOffs(s, []kvPair{{key, value}})
	if len(holds) == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if h := n.shards[s]; h != nil && h.ready && h.state == active {
		n.o.Handler.Ready(s, holds)
	}
}

// parseHoldOffs reads the hold-off keys of one shard (a range read of
// shards/<NNNN>/holdoff/).
func parseHoldOffs(s int, kvs []kvPair) map[string]time.Time {
	out := map[string]time.Time{}
	pfx := shardKey(s, holdOffLeaf)
	for _, kv := range kvs {
		domain, ok := strings.CutPrefix(kv.key, pfx)
		ms, err := strconv.ParseInt(kv.value, 10, 64)
		if ok && domain != "" && err == nil {
			out[domain] = time.UnixMilli(ms)
		}
	}
	return out
}

type kvPair struct{ key, value string }

// addPending adds hold-offs to the pending ones (a later time wins),
// saves them and wakes holdOffLoop.
func (n *Node) addPending(holds map[holdOffKey]time.Time) {
	n.holdMu.Lock()
	for k, t := range holds {
		if t.After(n.pending[k]) {
			n.pending[k] = t
		}
	}
	n.savePendingLocked()
	n.holdMu.Unlock()
	select {
	case n.holdc <- struct{}{}:
	default:
	}
}

// holdOffLoop writes the pending hold-offs whenever there are some, every
// retryEvery until etcd takes them.
func (n *Node) holdOffLoop() {
	defer n.loops.Done()
	for {
		var retry <-chan time.Time
		if n.flushPending(n.ctx) > 0 {
			retry = n.clock.After(n.t.retryEvery())
		}
		select {
		case <-n.ctx.Done():
			return
		case <-n.holdc:
		case <-retry:
		}
	}
}

// flushPending writes the pending hold-offs, dropping those written or
// past, and returns how many are left (it stops at the first failure:
// etcd does not answer).
func (n *Node) flushPending(ctx context.Context) int {
	n.holdMu.Lock()
	todo := make(map[holdOffKey]time.Time, len(n.pending))
	for k, t := range n.pending {
		todo[k] = t
	}
	n.holdMu.Unlock()
	if len(todo) == 0 {
		return 0
	}
	written := map[holdOffKey]time.Time{}
	for k, until := range todo {
		rctx, cancel := context.WithTimeout(ctx, 2*n.t.requestTimeout())
		err := n.writeHoldOff(rctx, k.shard, k.domain, until)
		cancel()
		if err != nil {
			n.log.Debug("pending hold-offs not written yet", "left", len(todo)-len(written), "err", err)
			break
		}
		written[k] = until
		n.log.Info("wrote a site's wait kept while etcd did not answer", "shard", k.shard, "domain", k.domain, "until", until)
	}
	now := n.clock.Now()
	n.holdMu.Lock()
	defer n.holdMu.Unlock()
	for k, t := range n.pending {
		if w, ok := written[k]; (ok && !t.After(w)) || !t.After(now) {
			delete(n.pending, k)
		}
	}
	if len(written) > 0 {
		n.savePendingLocked()
	}
	return len(n.pending)
}

// pendingFile is NodeOptions.HoldOffFile's content.
type pendingFile struct {
	HoldOffs []pendingHoldOff `json:"hold_offs"`
}

type pendingHoldOff struct {
	Shard  int       `json:"shard"`
	Domain string    `json:"domain"`
	Until  time.Time `json:"until"`
}

// savePendingLocked writes the pending hold-offs to HoldOffFile (none:
// the file is removed), atomically and durably; n.holdMu is held. A
// failure is logged: the hold-offs stay in memory.
func (n *Node) savePendingLocked() {
	path := n.o.HoldOffFile
	if path == "" {
		return
	}
	if len(n.pending) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			n.log.Warn("could not remove the file of pending hold-offs", "path", path, "err", err)
		}
		return
	}
	var f pendingFile
	for k, t := range n.pending {
		f.HoldOffs = append(f.HoldOffs, pendingHoldOff{Shard: k.shard, Domain: k.domain, Until: t.UTC()})
	}
	raw, _ := json.Marshal(f)
	if err := writeFileSynced(path, raw); err != nil {
		n.log.Warn("could not save the pending hold-offs: a crash before etcd answers loses them", "path", path, "err", err)
	}
}

// loadPending reads HoldOffFile (left by an earlier run that could not
// write them to etcd) into the pending hold-offs.
func (n *Node) loadPending() error {
	if n.o.HoldOffFile == "" {
		return nil
	}
	raw, err := os.ReadFile(n.o.HoldOffFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pending hold-offs: %w", err)
	}
	var f pendingFile
	if err := json.Unmarshal(raw, &f); err != nil {
		return fmt.Errorf("pending hold-offs %s: %w", n.o.HoldOffFile, err)
	}
	now := n.clock.Now()
	n.holdMu.Lock()
	for _, h := range f.HoldOffs {
		k := holdOffKey{h.Shard, h.Domain}
		if h.Shard >= 0 && h.Shard < n.cfg.Shards && h.Until.After(now) && h.Until.After(n.pending[k]) {
			n.pending[k] = h.Until
		}
	}
	left := len(n.pending)
	n.holdMu.Unlock()
	if left > 0 {
		n.log.Info("sites' waits an earlier run could not write to etcd: writing them", "hold_offs", left)
	}
	return nil
}

// writeFileSynced replaces path with data, atomically and durably
// (atomicfile.WriteFile, 0600).
func writeFileSynced(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o600)
}
