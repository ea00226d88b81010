package crawl

import (
	"context"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/fleet/fleettest"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/simweb"
)

// fakeNode is a fleet node's handler and gate around fleettest.Fake, as
// package fleetnode wires the real one: Start opens the shard to the
// crawl, Stop closes it.
type fakeNode struct {
	fake  *fleettest.Fake
	store *shard.Store
	crawl *Fleet
	mu    sync.Mutex
	fence map[int]fleet.Fence
}

func (n *fakeNode) Start(_ context.Context, g fleet.Grant) error {
	n.store.SetFence(g.Shard, g.Fence.CheckHeld)
	n.mu.Lock()
	n.fence[g.Shard] = g.Fence
	n.mu.Unlock()
	n.crawl.Open(g.Shard, false, g.HoldOff)
	return nil
}

func (n *fakeNode) Ready(s int, holdOffs map[string]time.Time) { n.crawl.HoldOffs(s, holdOffs) }

func (n *fakeNode) Stop(s int, _ bool) time.Time { return n.crawl.Close(s) }

func (n *fakeNode) Export(context.Context, fleet.ExportRequest, fleet.Fence) (fleet.Part, error) {
	return fleet.Part{}, nil
}

func (n *fakeNode) MaySend(s int) error { return n.fake.MaySend(s) }

func (n *fakeNode) ReserveIP(ctx context.Context, ip netip.Addr, d time.Duration) (time.Time, error) {
	return n.fake.ReserveIP(ctx, ip, d)
}

func (n *fakeNode) HoldOff(ctx context.Context, s int, domain string, until time.Time) error {
	return n.fake.PutHoldOff(ctx, s, domain, until)
}

// A fleet node's crawl sends requests only to the sites of the shards it
// holds, all of them, and none once its deadline has passed; a shard
// taken away mid-crawl gets no request after Stop returns.
func TestFleetCrawlOwnedShardsOnly(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a simulated web")
	}
	w, opts := startSimweb(t, simweb.Config{Seed: 5, Sites: 24, NoNamed: true})
	store, err := shard.Open(filepath.Join(t.TempDir(), "store"), shard.Options{Create: true, Shards: 4, Graph: graph.Options{NameCache: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	node := &fakeNode{fake: fleettest.New(nil, 0), store: store, fence: map[int]fleet.Fence{}}
	node.crawl = NewFleet(node, store.ShardOf)
	for i := range store.Shards() {
		store.SetFence(i, func() error { return &fleet.NotNowError{Shard: i, Err: fleet.ErrNotOwner} })
	}
	var mine, others []string
	for _, s := range w.Sites() {
		if sh := store.ShardOf(s.Domain); sh == 0 || sh == 1 {
			mine = append(mine, s.Domain)
		} else {
			others = append(others, s.Domain)
		}
	}
	if len(mine) == 0 || len(others) == 0 {
		t.Fatalf("the web's sites all fall on one side: %d mine, %d others", len(mine), len(others))
	}
	opts.Seeds = []string{writeFile(t, "seeds.txt", strings.Join(w.Seeds(), "\n"))}
	opts.MinDelay, opts.MinDelaySet = 10*time.Millisecond, true
	opts.IdleRecheck = 50 * time.Millisecond
	opts.Fleet = node.crawl
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Run(ctx, store, opts); done <- err }()
	for _, s := range []int{0, 1} {
		if _, err := node.fake.Grant(ctx, node, s, 0); err != nil {
			t.Fatal(err)
		}
	}
	visited := func(d string) bool {
		st, ok, err := store.Domain(d)
		return err == nil && ok && st.Visited()
	}
	deadline := time.Now().Add(30 * time.Second)
	for slices.ContainsFunc(mine, func(d string) bool { return !visited(d) }) {
		if time.Now().After(deadline) {
			t.Fatalf("not every site of shards 0 and 1 visited in 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Shard 1 taken away; the deadline passes: nothing more is sent.
	node.fake.Take(node, 1, false)
	node.fake.SetDeadlinePassed(true)
	sent := len(w.Requests())
	// A seed of shard 2 now held would be visited, but the deadline has
	// passed: no request.
	if _, err := node.fake.Grant(ctx, node, 2, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(w.Requests()); n != sent {
		t.Errorf("%d requests after the deadline passed", n-sent)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, r := range w.Requests() {
		if sh := store.ShardOf(r.Site); sh != 0 && sh != 1 {
			t.Errorf("request to %s (shard %d), which the node did not hold while it could send: %s%s", r.Site, sh, r.Host, r.Path)
		}
	}
	for _, d := range others {
		if visited(d) {
			t.Errorf("%s (shard %d) visited", d, store.ShardOf(d))
		}
	}
}
