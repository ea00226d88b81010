package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/mapthenet/mapthenet/fleet/etcdtest"
)

// fastTiming is the shortest timing etcd allows (a 2 s lease) with a
// "response timeout" that covers the test workers' 5 ms requests.
func fastTiming() Timing {
	return Timing{TTL: 2 * time.Second, Margin: 400 * time.Millisecond, ResponseTimeout: 50 * time.Millisecond, ClockSkew: -1}
}

// newFleet starts a one-member embedded etcd with a fleet of k shards.
func newFleet(t *testing.T, k int) (*etcdtest.Cluster, *clientv3.Client) {
	return newFleetB(t, k)
}

func newFleetB(t testing.TB, k int) (*etcdtest.Cluster, *clientv3.Client) {
	t.Helper()
	c := etcdtest.Embedded(t, 1)
	cli := c.Client(t)
	initFleet(t, cli, k)
	return c, cli
}

func initFleet(t testing.TB, cli *clientv3.Client, k int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, made, err := Init(ctx, cli, k, time.Now()); err != nil || !made {
		t.Fatalf("Init: made %v, err %v", made, err)
	}
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() && os.Getenv("FLEET_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// testSettle is the tests' settle time: short, since most tests are not
// about settling and each node start would wait the default (the TTL);
// settle_test.go and TestRebalanceOneOwnerAtEveryInstant use the default.
const testSettle = 200 * time.Millisecond

// startNode joins cli's fleet as name; it leaves when the test ends.
func startNode(t *testing.T, cli *clientv3.Client, name string, h *testHandler, edit ...func(*NodeOptions)) *Node {
	t.Helper()
	o := NodeOptions{Name: name, Version: "test", Timing: fastTiming(), Handler: h, Logger: testLogger(t), Settle: testSettle}
	for _, e := range edit {
		e(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := StartNode(ctx, cli, o)
	if err != nil {
		t.Fatalf("StartNode %s: %v", name, err)
	}
	h.node.Store(n)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n.Close(ctx)
	})
	return n
}

// startNodeB is startNode for benchmarks.
func startNodeB(b testing.TB, cli *clientv3.Client, h *testHandler) *Node {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := StartNode(ctx, cli, NodeOptions{Name: h.name, Timing: fastTiming(), Handler: h, Logger: testLogger(b), Settle: testSettle})
	if err != nil {
		b.Fatal(err)
	}
	h.node.Store(n)
	b.Cleanup(func() { n.Close(context.Background()) })
	return n
}

// answered runs call, an etcd write a test needs done, again while it
// fails because etcd did not answer within the node's request timeout (a
// quarter of fastTiming's 2 s TTL: a loaded machine's in-process etcd
// took longer), for up to 10 s; it returns call's last error. The node's
// own callers do the same (a crawl writes its counts again next time).
func answered(t *testing.T, call func() error) error {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := call()
		if !errors.Is(err, context.DeadlineExceeded) || time.Now().After(deadline) {
			return err
		}
		t.Logf("tried again: %v", err)
	}
}

// waitFor polls cond until it holds, failing the test after within.
func waitFor(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ownedShards(n *Node) []int {
	var out []int
	for _, o := range n.Owned() {
		out = append(out, o.Shard)
	}
	return out
}

func readyShards(n *Node) []int {
	var out []int
	for _, o := range n.Owned() {
		if o.Ready {
			out = append(out, o.Shard)
		}
	}
	return out
}

// testHandler records what the node asks of it and, with a checker,
// runs a worker per held shard that sends "requests" whenever MaySend
// allows, as a crawl would.
type testHandler struct {
	name    string
	node    atomic.Pointer[Node]
	check   *overlapChecker // nil: no workers
	request time.Duration   // how long one worker request lasts

	mu         sync.Mutex
	grants     map[int]Grant
	ready      map[int]map[string]time.Time // Ready's hold-offs
	history    []Grant
	stops      []stopCall
	workers    map[int]worker
	exportFail map[int]error
	exportHold chan struct{} // non-nil: Export waits for it to close
	startFail  map[int]error
	quiet      time.Duration // Stop's quiet time after now (0: now; <0: unknown)
}

type worker struct {
	cancel context.CancelFunc
	done   chan struct{}
}

type stopCall struct {
	shard int
	lost  bool
}

func newHandler(name string, check *overlapChecker) *testHandler {
	return &testHandler{name: name, check: check, request: 5 * time.Millisecond,
		grants: map[int]Grant{}, ready: map[int]map[string]time.Time{}, workers: map[int]worker{}, exportFail: map[int]error{}, startFail: map[int]error{}}
}

func (h *testHandler) Start(ctx context.Context, g Grant) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.history = append(h.history, g)
	if err := h.startFail[g.Shard]; err != nil {
		return err
	}
	h.grants[g.Shard] = g
	if h.check != nil {
		wctx, cancel := context.WithCancel(context.Background())
		w := worker{cancel: cancel, done: make(chan struct{})}
		h.workers[g.Shard] = w
		go func() {
			defer close(w.done)
			h.work(wctx, g.Shard)
		}()
	}
	return nil
}

func (h *testHandler) work(ctx context.Context, s int) {
	for ctx.Err() == nil {
		if n := h.node.Load(); n != nil && n.MaySend(s) == nil {
			h.check.begin(s, h.name)
			time.Sleep(h.request)
			h.check.end(s, h.name)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (h *testHandler) Ready(s int, holdOffs map[string]time.Time) {
	h.mu.Lock()
	if h.ready[s] == nil {
		h.ready[s] = map[string]time.Time{}
	}
	for d, t := range holdOffs {
		h.ready[s][d] = t
	}
	h.mu.Unlock()
}

// readyHoldOffs are the hold-offs the Ready calls of shard s had (ok:
// Ready was called).
func (h *testHandler) readyHoldOffs(s int) (map[string]time.Time, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.ready[s]
	return maps.Clone(r), ok
}

func (h *testHandler) Stop(s int, lost bool) time.Time {
	h.mu.Lock()
	w, running := h.workers[s]
	delete(h.workers, s)
	delete(h.grants, s)
	h.stops = append(h.stops, stopCall{s, lost})
	quiet := h.quiet
	h.mu.Unlock()
	if running {
		w.cancel()
		<-w.done // no request in flight when Stop returns
	}
	if quiet < 0 {
		return time.Time{}
	}
	return time.Now().Add(quiet)
}

func (h *testHandler) Export(ctx context.Context, r ExportRequest, f Fence) (Part, error) {
	h.mu.Lock()
	err, hold := h.exportFail[f.Shard], h.exportHold
	h.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return Part{}, ctx.Err()
		}
	}
	if err != nil {
		return Part{}, err
	}
	if err := f.Check(); err != nil {
		return Part{}, err
	}
	return Part{URI: fmt.Sprintf("file:///parts/%s/shard=%04d", r.ID, f.Shard), Rows: int64(100 + f.Shard)}, nil
}

func (h *testHandler) grant(s int) (Grant, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	g, ok := h.grants[s]
	return g, ok
}

// grants is every Grant Start was given, in order.
func (h *testHandler) allGrants() []Grant {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.history)
}

// current counts the shards started and not stopped.
func (h *testHandler) current() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.grants)
}

// started counts Start calls that succeeded.
func (h *testHandler) started() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := 0
	for _, g := range h.history {
		if h.startFail[g.Shard] == nil {
			c++
		}
	}
	return c
}

func newFakeClock() *clockwork.FakeClock {
	return clockwork.NewFakeClockAt(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
}

func (h *testHandler) lostStops() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := 0
	for _, s := range h.stops {
		if s.lost {
			c++
		}
	}
	return c
}

// overlapChecker fails the test if two nodes have a request in flight
// for one shard at once, and counts requests per node.
type overlapChecker struct {
	t        *testing.T
	mu       sync.Mutex
	inFlight map[int]string
	requests map[string]int
	bad      []string
}

func newChecker(t *testing.T) *overlapChecker {
	return &overlapChecker{t: t, inFlight: map[int]string{}, requests: map[string]int{}}
}

func (c *overlapChecker) begin(s int, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if other, busy := c.inFlight[s]; busy && other != node {
		c.bad = append(c.bad, fmt.Sprintf("shard %d: %s sent while %s had a request in flight", s, node, other))
	}
	c.inFlight[s] = node
	c.requests[node]++
}

func (c *overlapChecker) end(s int, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inFlight[s] == node {
		delete(c.inFlight, s)
	}
}

func (c *overlapChecker) count(node string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests[node]
}

func (c *overlapChecker) verify() {
	c.t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, b := range c.bad {
		c.t.Error(b)
	}
}

// cuttableLease fails renewals while cut (keys and transactions still
// work): a node whose keep-alives do not get through.
type cuttableLease struct {
	clientv3.Lease
	cut atomic.Bool
}

var errCut = errors.New("renewal cut by the test")

func (c *cuttableLease) KeepAliveOnce(ctx context.Context, id clientv3.LeaseID) (*clientv3.LeaseKeepAliveResponse, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.Lease.KeepAliveOnce(ctx, id)
}
