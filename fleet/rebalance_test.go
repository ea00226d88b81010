package fleet

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/mapthenet/mapthenet/fleet/etcdtest"
)

// Nodes join, leave cleanly, are cut off from etcd and come back, while a
// worker per held shard sends "requests" whenever MaySend allows: at no
// instant do two nodes have a request in flight for one shard, and every
// shard keeps being worked. Each node settles for the default time (the
// TTL) when it joins and when it comes back.
func TestRebalanceOneOwnerAtEveryInstant(t *testing.T) {
	const k = 8
	c, cli := newFleet(t, k)
	defaultSettle := func(o *NodeOptions) { o.Settle = 0 }
	check := newChecker(t)
	defer check.verify()
	ctx := context.Background()

	all := func(nodes ...*Node) bool {
		var got []int
		for _, n := range nodes {
			got = append(got, readyShards(n)...)
		}
		slices.Sort(got)
		return len(got) == k && slices.Equal(slices.Compact(got), got)
	}
	// fair: each node holds its even share.
	fair := func(nodes ...*Node) bool {
		for _, n := range nodes {
			if l := len(readyShards(n)); l < k/len(nodes) || l > (k+len(nodes)-1)/len(nodes) {
				return false
			}
		}
		return all(nodes...)
	}

	ha := newHandler("a", check)
	a := startNode(t, cli, "a", ha, defaultSettle)
	waitFor(t, 10*time.Second, "a works all shards", func() bool { return all(a) })

	// b joins: half the shards move to it, cleanly (no takeover wait).
	hb := newHandler("b", check)
	b := startNode(t, cli, "b", hb, defaultSettle)
	waitFor(t, 10*time.Second, "a and b share the shards", func() bool { return fair(a, b) })
	for _, g := range hb.allGrants() {
		if g.Handoff == nil {
			t.Errorf("shard %d moved to b without a clean handoff", g.Shard)
		}
	}

	// c reaches etcd through a proxy the test can cut.
	proxy := etcdtest.NewProxy(t, c.Endpoints[0][len("http://"):])
	cliC := c.ClientOf(t, proxy.Endpoint())
	hc := newHandler("c", check)
	cn := startNode(t, cliC, "c", hc, defaultSettle)
	waitFor(t, 10*time.Second, "a, b and c share the shards", func() bool { return fair(a, b, cn) })
	cShards := readyShards(cn)
	// c's workers send (waited for, not slept on: a loaded machine can
	// leave them unscheduled for a fixed 100 ms).
	before := check.count("c")
	waitFor(t, 5*time.Second, "c's workers send", func() bool { return check.count("c") > before })

	// c is cut off: its deadline stops its workers; its lease runs out
	// and a and b take its shards after the takeover wait.
	proxy.Cut()
	cut := time.Now()
	waitFor(t, 3*fastTiming().TTL+time.Second, "a and b work c's shards", func() bool { return all(a, b) })
	t.Logf("c's shards worked elsewhere %v after the cut", time.Since(cut).Round(time.Millisecond))
	for _, s := range cShards {
		if err := cn.MaySend(s); err == nil {
			t.Errorf("cut-off c may still send for shard %d", s)
		}
	}
	// c comes back: it finds its lease gone, rejoins, and gets its share
	// back from a and b.
	proxy.Restore()
	waitFor(t, 15*time.Second, "a, b and c share the shards again", func() bool { return fair(a, b, cn) })
	if hc.lostStops() == 0 {
		t.Error("c never stopped its shards as lost")
	}

	// b leaves cleanly.
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := b.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a and c share the shards", func() bool { return fair(a, cn) })
	resp, err := cli.Get(ctx, nodeKey("b"))
	if err != nil || len(resp.Kvs) != 0 {
		t.Errorf("b's membership key after it left: %v %v", resp, err)
	}
	owners, err := cli.Get(ctx, shardsPrefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range owners.Kvs {
		if _, leaf, _ := parseShardKey(string(kv.Key)); leaf == ownerLeaf && string(kv.Value) == "b" {
			t.Errorf("%s still b's", kv.Key)
		}
	}
	for _, name := range []string{"a", "b", "c"} {
		if check.count(name) == 0 {
			t.Errorf("node %s sent nothing", name)
		}
	}
}

// A request a node started just before its deadline may run for the whole
// response timeout, past the moment its lease runs out: the next owner's
// takeover wait covers it.
func TestTakeoverWaitCoversRequestInFlight(t *testing.T) {
	c, cli := newFleet(t, 1)
	check := newChecker(t)
	defer check.verify()
	timing := fastTiming()
	timing.ResponseTimeout = 1500 * time.Millisecond
	withTiming := func(o *NodeOptions) { o.Timing = timing }

	proxy := etcdtest.NewProxy(t, c.Endpoints[0][len("http://"):])
	hOld := newHandler("old", nil)
	old := startNode(t, c.ClientOf(t, proxy.Endpoint()), "old", hOld, withTiming)
	// Once its handler has started the shard (hold reads the grant no
	// more until the holding ends), skip its own takeover wait.
	waitFor(t, 10*time.Second, "old holds the shard, started", func() bool {
		old.mu.Lock()
		defer old.mu.Unlock()
		h := old.shards[0]
		if h == nil || h.state != active {
			return false
		}
		h.grant.ReadyAt = time.Now()
		h.ready = true
		return true
	})

	hNew := newHandler("new", check)
	newNode := startNode(t, cli, "new", hNew, withTiming)

	proxy.Cut()
	defer proxy.Restore() // so that old leaves at once when the test ends
	// The old owner's last request: started at the last moment MaySend
	// allowed, lasting the whole response timeout. From 200 ms before its
	// deadline the old owner asks MaySend every millisecond until it
	// refuses, and its request is in flight from the first yes to the
	// last yes + the response timeout. (Asking once, 50 ms before the
	// deadline, failed the test whenever a sleep overshot by 50 ms, as
	// it does on a loaded machine; here an overshoot only moves the last
	// yes earlier.)
	sent := make(chan time.Time, 1)
	go func() {
		for time.Until(old.Deadline()) > 200*time.Millisecond {
			time.Sleep(5 * time.Millisecond)
		}
		var last time.Time
		for {
			err := old.MaySend(0)
			if err != nil {
				if !errors.Is(err, ErrDeadline) {
					t.Errorf("old owner before its deadline: %v", err)
				}
				break
			}
			if last.IsZero() {
				check.begin(0, "old")
			}
			last = time.Now() // the request may start as late as this
			time.Sleep(time.Millisecond)
		}
		sent <- last
		if last.IsZero() {
			return
		}
		time.Sleep(time.Until(last.Add(timing.ResponseTimeout)))
		check.end(0, "old")
	}()
	waitFor(t, 15*time.Second, "the new owner sends", func() bool { return check.count("new") > 0 })
	if last := <-sent; last.IsZero() {
		// This goroutine slept past the whole window: nothing was tested.
		t.Skip("the old owner's poll woke only after its deadline (a machine too loaded for this timing): no last request to check")
	} else {
		t.Logf("new's first request %v after old's last yes", time.Since(last).Round(10*time.Millisecond))
	}
	_ = newNode
}
