package fleet

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// settleTiming is a lease long enough that etcd, which counts it in real
// time, keeps it for the whole of a test whose clock is fake.
func settleTiming() Timing {
	return Timing{TTL: 30 * time.Second, Margin: 6 * time.Second, ResponseTimeout: 30 * time.Second, ClockSkew: 250 * time.Millisecond}
}

// reconciles records the revisions a node's reconciles read, so that a
// test can wait for a node to have acted on a change without sleeping.
type reconciles struct {
	mu   sync.Mutex
	last int64
	runs int
}

func (r *reconciles) saw(rev int64) {
	r.mu.Lock()
	r.last = max(r.last, rev)
	r.runs++
	r.mu.Unlock()
}

func (r *reconciles) count() (runs int, last int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs, r.last
}

// settleNode starts a node on clock with settleTiming and settle
// (0: the default), recording its reconciles.
func settleNode(t *testing.T, cli *clientv3.Client, name string, clock clockwork.Clock, settle time.Duration) (*Node, *testHandler, *reconciles) {
	t.Helper()
	h := newHandler(name, nil)
	r := &reconciles{}
	n := startNode(t, cli, name, h, func(o *NodeOptions) {
		o.Clock, o.Timing, o.Settle, o.onReconcile = clock, settleTiming(), settle, r.saw
	})
	return n, h, r
}

// waitReconciled waits until each node has reconciled from a read at
// revision rev or later (it has seen every change up to rev).
func waitReconciled(t *testing.T, rev int64, rs ...*reconciles) {
	t.Helper()
	waitFor(t, 10*time.Second, "every node reconciled after the last change", func() bool {
		for _, r := range rs {
			if _, last := r.count(); last < rev {
				return false
			}
		}
		return true
	})
}

func joinRev(n *Node) int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lease.joinRev
}

// recordSettling reads whether node's record in etcd says Settling.
func recordSettling(t *testing.T, cli *clientv3.Client, node string) bool {
	t.Helper()
	resp, err := cli.Get(context.Background(), nodeKey(node))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("node %s's record: %v %v", node, resp, err)
	}
	var info NodeInfo
	if err := json.Unmarshal(resp.Kvs[0].Value, &info); err != nil {
		t.Fatal(err)
	}
	return info.Settling
}

// Three nodes that join within the settle time of the first take their
// shares once each: no shard is ever given up or taken twice (the first
// node does not take every shard and hand most over). Then one owner per
// shard, loads even.
func TestNodesJoiningTogetherHandNothingOver(t *testing.T) {
	const k = 8
	_, cli := newFleet(t, k)
	clock := newFakeClock()
	const settle = 10 * time.Second
	a, ha, ra := settleNode(t, cli, "a", clock, settle)
	clock.Advance(settle * 4 / 10)
	b, hb, rb := settleNode(t, cli, "b", clock, settle)
	clock.Advance(settle * 4 / 10)
	c, hc, rc := settleNode(t, cli, "c", clock, settle)
	// Every node has read the fleet with all three in it, and none holds
	// a shard: none has been a member for the settle time yet.
	waitReconciled(t, joinRev(c), ra, rb, rc)
	for _, n := range []*Node{a, b, c} {
		if got := ownedShards(n); len(got) != 0 {
			t.Fatalf("%s took shards %v while settling", n.Name(), got)
		}
		if !recordSettling(t, cli, n.Name()) {
			t.Errorf("%s's record does not say it is settling", n.Name())
		}
	}
	// a settles, then b, then c: each takes its share as it does.
	clock.Advance(settle * 4 / 10) // a has been a member for 1.2 × settle
	waitFor(t, 10*time.Second, "a takes its share", func() bool { return ha.started() >= k/3 })
	clock.Advance(settle * 4 / 10)
	clock.Advance(settle * 4 / 10) // c too
	waitFor(t, 10*time.Second, "the shards spread evenly, each started", func() bool {
		sum := 0
		for _, h := range []*testHandler{ha, hb, hc} {
			if c := h.current(); c < k/3 || c > (k+2)/3 {
				return false
			}
			sum += h.current()
		}
		return sum == k
	})

	seen := map[int]string{}
	for _, h := range []*testHandler{ha, hb, hc} {
		if got := h.started(); got < k/3 || got > (k+2)/3 {
			t.Errorf("%s took %d shards, not an even share of %d", h.name, got, k)
		}
		for _, g := range h.allGrants() {
			if other, dup := seen[g.Shard]; dup {
				t.Errorf("shard %d taken by %s and by %s", g.Shard, other, h.name)
			}
			seen[g.Shard] = h.name
			if g.Handoff != nil {
				t.Errorf("shard %d came to %s by a handoff from %s", g.Shard, h.name, g.Handoff.Node)
			}
		}
		h.mu.Lock()
		if len(h.stops) != 0 {
			t.Errorf("%s gave up shards %v", h.name, h.stops)
		}
		h.mu.Unlock()
	}
	for _, n := range []*Node{a, b, c} {
		if recordSettling(t, cli, n.Name()) {
			t.Errorf("%s's record still says it is settling", n.Name())
		}
	}
	// Every owner key was created once (version 1): no shard changed hands.
	resp, err := cli.Get(context.Background(), shardsPrefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range resp.Kvs {
		if _, leaf, _ := parseShardKey(string(kv.Key)); leaf == ownerLeaf && seen[mustShard(t, string(kv.Key))] != string(kv.Value) {
			t.Errorf("%s is %s's, its take was %s's", kv.Key, kv.Value, seen[mustShard(t, string(kv.Key))])
		}
	}
}

func mustShard(t *testing.T, key string) int {
	s, _, ok := parseShardKey(key)
	if !ok {
		t.Fatalf("key %s", key)
	}
	return s
}

// A node alone takes nothing for the settle time (by default the lease
// TTL), then every shard; fleet status shows it settling meanwhile.
func TestLoneNodeTakesAllAfterSettling(t *testing.T) {
	const k = 4
	_, cli := newFleet(t, k)
	clock := newFakeClock()
	a, ha, ra := settleNode(t, cli, "a", clock, 0)
	settle := settleTiming().TTL // the default
	waitReconciled(t, joinRev(a), ra)
	st, err := ReadStatus(context.Background(), cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 1 || !st.Nodes[0].Settling {
		t.Errorf("fleet status while a settles: %+v", st.Nodes)
	}
	clock.Advance(settle - time.Millisecond)
	runs, _ := ra.count()
	a.kick()
	waitFor(t, 10*time.Second, "a reconciles again", func() bool { r, _ := ra.count(); return r > runs })
	if got := ownedShards(a); len(got) != 0 {
		t.Fatalf("a took %v a millisecond before it settled", got)
	}
	clock.Advance(time.Millisecond)
	waitFor(t, 10*time.Second, "a takes every shard", func() bool { return ha.started() == k })
	if recordSettling(t, cli, "a") {
		t.Error("a's record still says it is settling")
	}
}

// A node that joins a settled fleet gets its share by the normal clean
// handover, once it has settled: until then the owner keeps the shards
// (and works them) rather than leave them unowned.
func TestLateJoinerGetsShareAfterSettling(t *testing.T) {
	const k = 8
	_, cli := newFleet(t, k)
	clock := newFakeClock()
	const settle = 10 * time.Second
	_, ha, ra := settleNode(t, cli, "a", clock, settle)
	clock.Advance(settle)
	waitFor(t, 10*time.Second, "a takes every shard", func() bool { return ha.started() == k })

	b, hb, rb := settleNode(t, cli, "b", clock, settle)
	waitReconciled(t, joinRev(b), ra, rb)
	if got := ha.current(); got != k {
		t.Fatalf("a holds %d shards while b settles, want all %d", got, k)
	}
	if got := ownedShards(b); len(got) != 0 {
		t.Fatalf("b took %v while settling", got)
	}
	clock.Advance(settle)
	waitFor(t, 10*time.Second, "b takes its half", func() bool { return hb.started() == k/2 && ha.current() == k/2 })
	for _, g := range hb.allGrants() {
		if g.Handoff == nil || g.Handoff.Node != "a" {
			t.Errorf("shard %d came to b without a's clean handoff: %+v", g.Shard, g.Handoff)
		}
	}
	ha.mu.Lock()
	defer ha.mu.Unlock()
	if len(ha.stops) != k/2 {
		t.Errorf("a gave up %d shards, want %d", len(ha.stops), k/2)
	}
	for _, s := range ha.stops {
		if s.lost {
			t.Errorf("a lost shard %d rather than hand it over", s.shard)
		}
	}
}
