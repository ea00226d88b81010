package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/fleet/etcdtest"
)

// Bad --fleet and --node values are usage errors (exit 2) naming the bad
// part; a fleet crawl or rebuild without its snapshot store is refused.
func TestFleetFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "status"}, "--fleet is required"},
		{[]string{"fleet", "status", "--fleet", "http://h1:2379"}, "want etcd://HOST:PORT"},
		{[]string{"fleet", "status", "--fleet", "etcd://h1:2379,,h2:2379"}, "member 2"},
		{[]string{"fleet", "init", "--fleet", "etcd://h1:99999", "--shards", "8"}, "want 1 to 65535"},
		{[]string{"fleet", "init", "--fleet", "etcd://h1:2379", "--shards", "0"}, "--shards 0"},
		{[]string{"crawl", "--node", "n1"}, "needs --fleet"},
		{[]string{"crawl", "--fleet", "etcd://h1:2379/x", "--node", "n1"}, "no path"},
		{[]string{"crawl", "--fleet", "etcd://h1:2379", "--node", "Node One"}, "--node \"Node One\""},
		{[]string{"crawl", "--fleet", "etcd://h1:2379,h2:2379", "--node", "n1", "--connect-to", "::127.0.0.1:1"}, "needs --snapshots"},
		{[]string{"crawl", "--fleet", "etcd://h1:2379,h2:2379", "--node", "n1", "--connect-to", "::127.0.0.1:1", "--until-idle"}, "runs until it is stopped"},
		{[]string{"rebuild", "--fleet", "etcd://h1:2379"}, "needs --snapshots"},
	}
	for _, tt := range tests {
		code, _, errOut := runIn(t, dir, tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit 2 and %q", tt.args, code, errOut, tt.want)
		}
	}
}

// runFleet is runIn: the command's output goes to buffers, never through
// os.Stdout or os.Stderr, which the embedded etcd server's goroutines read.
func runFleet(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return runIn(t, dir, args...)
}

type idleHandler struct{}

func (idleHandler) Start(context.Context, fleet.Grant) error { return nil }
func (idleHandler) Stop(int, bool) time.Time                 { return time.Now() }
func (idleHandler) Ready(int, map[string]time.Time)          {}
func (idleHandler) Export(context.Context, fleet.ExportRequest, fleet.Fence) (fleet.Part, error) {
	return fleet.Part{}, nil
}

func TestFleetInitAndStatus(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	c := etcdtest.Embedded(t, 1)
	url := c.URL()
	code, out, errOut := runFleet(t, dir, "fleet", "status", "--fleet", url)
	if code != 0 || !strings.Contains(out, "no fleet at") {
		t.Fatalf("status before init: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = runFleet(t, dir, "fleet", "init", "--fleet", url, "--shards", "8", "--now", "2026-12-04T10:00:00Z")
	if code != 0 || !strings.Contains(out, ": made (8 shards, created 2026-12-04 10:00:00Z)") {
		t.Fatalf("init: exit %d, %q %q", code, out, errOut)
	}
	if code, out, _ = runFleet(t, dir, "fleet", "init", "--fleet", url, "--shards", "8"); code != 0 || !strings.Contains(out, "already there, unchanged") {
		t.Errorf("init again: exit %d, %q", code, out)
	}
	if code, _, errOut = runFleet(t, dir, "fleet", "init", "--fleet", url, "--shards", "4"); code != exitFailure || !strings.Contains(errOut, "already exists with 8 shards") {
		t.Errorf("init with another shard count: exit %d, %q", code, errOut)
	}

	cli := c.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := fleet.StartNode(ctx, cli, fleet.NodeOptions{Name: "crawl-1", Version: "v-test", Addr: "127.0.0.1:9464",
		Timing: fleet.Timing{TTL: 2 * time.Second}, Handler: idleHandler{}})
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for len(n.Owned()) < 8 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	countedAt := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	for _, o := range n.Owned() {
		f := fleet.NewFence(o.Shard, o.Token, func() error { return nil })
		// Written again while etcd does not answer within the node's
		// request timeout (500 ms at a 2 s TTL), as a loaded machine's may
		// not: only the counts matter here.
		err := n.PutShardCounts(ctx, f, fleet.ShardCounts{At: countedAt, Due: int64(o.Shard), Waiting: 2})
		for errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			t.Logf("tried again: %v", err)
			err = n.PutShardCounts(ctx, f, fleet.ShardCounts{At: countedAt, Due: int64(o.Shard), Waiting: 2})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut = runFleet(t, dir, "fleet", "status", "--fleet", url)
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"8 shards", "nodes: 1 live", "crawl-1  v-test", "holds 8 (0-7), 28 due, 16 waiting", "metrics 127.0.0.1:9464",
		"shards: 8 owned, 0 without owner (none), 0 moving (none)", "     0  crawl-1", "rebuild: none running",
		"3 due, 2 waiting at 2026-12-04 10:00:00Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	code, out, _ = runFleet(t, dir, "fleet", "status", "--fleet", url, "--json")
	var st fleet.Status
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status --json: exit %d, %v: %s", code, err, out)
	}
	if len(st.Nodes) != 1 || st.Nodes[0].Name != "crawl-1" || st.Nodes[0].LeaseTTLLeft <= 0 || len(st.Shards) != 8 || st.Shards[3].Owner != "crawl-1" {
		t.Errorf("status JSON %s", out)
	}
	if nd, c := st.Nodes[0], st.Shards[3].Counts; nd.Due == nil || *nd.Due != 28 || nd.Waiting == nil || *nd.Waiting != 16 ||
		c == nil || c.Due != 3 || c.Waiting != 2 || c.Node != "crawl-1" || !c.At.Equal(countedAt) {
		t.Errorf("status JSON's due counts: %s", out)
	}

	// An etcd that does not answer is a failure that says which.
	code, _, errOut = runFleet(t, dir, "fleet", "status", "--fleet", "etcd://127.0.0.1:1", "--timeout", "1s")
	if code != exitFailure || !strings.Contains(errOut, "etcd at etcd://127.0.0.1:1 did not answer within 1s") {
		t.Errorf("unreachable etcd: exit %d, %q", code, errOut)
	}
}

// A node that has just joined says so: it holds nothing yet, and the
// shards it is to hold stay with their owners until it has settled.
func TestFleetStatusShowsSettlingNode(t *testing.T) {
	st := &fleet.Status{Config: &fleet.Config{Shards: 2, FleetID: "f"}, Nodes: []fleet.NodeStatus{
		{NodeInfo: fleet.NodeInfo{Name: "old"}, Shards: []int{0, 1}, Targets: []int{0}},
		{NodeInfo: fleet.NodeInfo{Name: "new", Settling: true}, Shards: []int{}, Targets: []int{1}},
	}, Shards: []fleet.ShardStatus{{Shard: 0, Owner: "old", Target: "old"}, {Shard: 1, Owner: "old", Target: "new"}}}
	var b strings.Builder
	if err := writeFleetStatus(&b, st); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for _, l := range lines {
		if settling := strings.Contains(l, "settling"); strings.HasPrefix(l, "  new ") != settling {
			t.Errorf("line %q: settling shown %v", l, settling)
		}
	}
	if !strings.Contains(b.String(), "  new ") {
		t.Errorf("no line for the new node in\n%s", b.String())
	}
}
