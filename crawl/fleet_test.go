package crawl

import (
	"context"
	"errors"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
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
	// holdOff, if set, gets each HoldOff with put, which passes it on,
	// and may act before and after it.
	holdOff func(domain string, put func() error) error
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
	put := func() error { return n.fake.PutHoldOff(ctx, s, domain, until) }
	if n.holdOff != nil {
		return n.holdOff(domain, put)
	}
	return put()
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
	ctx, cancel, done := runFleetCrawl(t, w, store, node, opts)
	defer cancel()
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

// A visit that ends in a 429 after the node's deadline passed (etcd lost
// its quorum as the site answered): its commit is refused, its hold-off
// kept pending and recorded for the fleet once etcd answers again, and
// the site is asked nothing more meanwhile or after, while the other
// sites' visits go on; the throttled visit is not recorded, so the site
// stays due (it is visited again after its wait, not lost).
func TestFleetThrottledPastDeadline(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a simulated web")
	}
	w, opts := startSimweb(t, simweb.Config{Seed: 3, Sites: 10, NoNamed: true, SpecialShare: 0.3,
		SpecialKinds: []simweb.Kind{simweb.KindThrottle429}})
	var throttled []string
	for _, s := range w.Sites() {
		if s.Kind == simweb.KindThrottle429 {
			throttled = append(throttled, s.Domain)
		}
	}
	if len(throttled) == 0 || len(throttled) == len(w.Sites()) {
		t.Fatalf("%d throttled sites of %d", len(throttled), len(w.Sites()))
	}
	store, err := shard.Open(filepath.Join(t.TempDir(), "store"), shard.Options{Create: true, Shards: 2, Graph: graph.Options{NameCache: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	node := &fakeNode{fake: fleettest.New(nil, 0), store: store, fence: map[int]fleet.Fence{}}
	node.crawl = NewFleet(node, store.ShardOf)
	// The first site to say "wait" says it as the deadline passes; the
	// test goes on once its hold-off has been passed on (and refused), not
	// before: told earlier, it could lift the deadline first.
	var once sync.Once
	first := make(chan string, 1)
	node.holdOff = func(d string, put func() error) error {
		isFirst := false
		once.Do(func() {
			node.fake.SetDeadlinePassed(true)
			isFirst = true
		})
		err := put()
		if isFirst {
			first <- d
		}
		return err
	}
	watch := &fencedWatch{Store: store, refused: map[string]bool{}}
	ctx, cancel, done := runFleetCrawl(t, w, watch, node, opts)
	defer cancel()
	for s := range store.Shards() {
		if _, err := node.fake.Grant(ctx, node, s, 0); err != nil {
			t.Fatal(err)
		}
	}
	var domain string
	select {
	case domain = <-first:
	case <-time.After(30 * time.Second):
		t.Fatal("no site asked to wait in 30 s")
	}
	s := store.ShardOf(domain)
	// The visit's commit is refused meanwhile: waited for, not slept on
	// (a commit that came after the deadline was lifted would be taken).
	for deadline := time.Now().Add(30 * time.Second); !watch.wasRefused(domain); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the visit of %s not refused by the shard's fence 30 s after the deadline passed", domain)
		}
	}
	if _, ok := node.fake.HoldOffs(s)[domain]; ok {
		t.Fatal("the hold-off was recorded past the deadline")
	}
	node.fake.SetDeadlinePassed(false) // etcd answers again
	until, ok := node.fake.HoldOffs(s)[domain]
	if !ok || until.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("hold-off of %s once etcd answers: %v (recorded %v), want an hour on", domain, until, ok)
	}
	visited := func(d string) bool {
		st, ok, err := store.Domain(d)
		return err == nil && ok && st.Visited()
	}
	held := func(d string) bool {
		_, ok := node.fake.HoldOffs(store.ShardOf(d))[d]
		return ok
	}
	// Every site is visited, or told the node to wait (other visits in
	// flight as the deadline passed may have been throttled too).
	deadline := time.Now().Add(30 * time.Second)
	for slices.ContainsFunc(w.Sites(), func(site simweb.Site) bool { return !visited(site.Domain) && !held(site.Domain) }) {
		if time.Now().After(deadline) {
			t.Fatal("not every site visited or held off 30 s after the deadline was lifted")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // a few more idle rechecks
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Not recorded: the site is still due (a seed of the run, or in the
	// schedule), and visited once its wait is over.
	if visited(domain) {
		t.Errorf("%s: its visit that ended past the deadline was recorded", domain)
	}
	told := map[string]bool{}
	for _, r := range w.Requests() {
		if told[r.Site] {
			t.Errorf("request to %s after its 429: %s%s", r.Site, r.Host, r.Path)
		}
		if r.Status == 429 {
			told[r.Site] = true
			if !held(r.Site) {
				t.Errorf("%s answered 429 and has no hold-off in the fleet", r.Site)
			}
		}
	}
}

// runFleetCrawl starts the crawl of w's seeds as node's, quick-paced, in
// the background: its context, the context's cancel and the channel Run's
// error comes on.
func runFleetCrawl(t *testing.T, w *simweb.Web, store Store, node *fakeNode, opts Options) (context.Context, context.CancelFunc, chan error) {
	opts.Seeds = []string{writeFile(t, "seeds.txt", strings.Join(w.Seeds(), "\n"))}
	opts.MinDelay, opts.MinDelaySet = 10*time.Millisecond, true
	opts.IdleRecheck = 50 * time.Millisecond
	opts.Fleet = node.crawl
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := Run(ctx, store, opts); done <- err }()
	return ctx, cancel, done
}

// fencedWatch is a sharded store that notes the domains of the visits its
// shards' fences refused.
type fencedWatch struct {
	*shard.Store
	mu      sync.Mutex
	refused map[string]bool
}

func (f *fencedWatch) RecordShard(s int, vs []*data.VisitResult) error {
	err := f.Store.RecordShard(s, vs)
	if errors.Is(err, graph.ErrFenced) {
		f.mu.Lock()
		for _, v := range vs {
			f.refused[v.Domain] = true
		}
		f.mu.Unlock()
	}
	return err
}

func (f *fencedWatch) wasRefused(domain string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.refused[domain]
}
