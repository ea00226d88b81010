package fleet

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/mapthenet/mapthenet/fleet/etcdtest"
)

// holdOffIn reads shard s's hold-off of domain from etcd (zero: none).
// A read that etcd does not answer within the node's request timeout
// (a quarter of fastTiming's 2 s TTL) is tried again, as the node itself
// does (makeReady): on a loaded machine, the in-process etcd took longer
// than 500 ms to answer one (GOMAXPROCS=1, -race).
func holdOffIn(t *testing.T, n *Node, s int, domain string) time.Time {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		holds, err := n.readHoldOffs(context.Background(), s)
		if err == nil {
			return holds[domain]
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		t.Logf("tried again: %v", err)
	}
}

// A site tells the owner to wait in a visit that ends after the owner's
// deadline, while the owner is cut off from etcd (its lease then runs
// out and another node takes the shard). The owner keeps the hold-off
// and writes it as soon as etcd answers again, though it no longer holds
// the shard; the new owner reads the shard's hold-offs again once its
// takeover wait is over, and has it before its first request; one
// written after that reaches it through its watch.
func TestHoldOffAfterDeadlineReachesNextOwner(t *testing.T) {
	c, cli := newFleet(t, 1)
	timing := fastTiming()
	timing.ResponseTimeout = 3 * time.Second // the new owner's wait: time for the old one to reconnect
	withTiming := func(o *NodeOptions) { o.Timing = timing }

	proxy := etcdtest.NewProxy(t, c.Endpoints[0][len("http://"):])
	hOld := newHandler("old", nil)
	old := startNode(t, c.ClientOf(t, proxy.Endpoint()), "old", hOld, withTiming)
	waitFor(t, 10*time.Second, "old started the shard", func() bool { return hOld.started() == 1 })
	hNew := newHandler("new", nil)
	newNode := startNode(t, cli, "new", hNew, withTiming)

	proxy.Cut()
	defer proxy.Restore()
	waitFor(t, 5*time.Second, "old's deadline passed", func() bool { return errors.Is(old.MaySend(0), ErrDeadline) })
	// The visit in flight at the deadline ends in a 429.
	until := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if err := old.PutHoldOff(context.Background(), 0, "slow.example", until); !errors.Is(err, ErrHoldOffPending) {
		t.Fatalf("PutHoldOff past the deadline, etcd cut off: %v, want ErrHoldOffPending", err)
	}
	waitFor(t, 10*time.Second, "new holds the shard, started", func() bool { return len(ownedShards(newNode)) == 1 && hNew.current() == 1 })
	if g, _ := hNew.grant(0); !g.HoldOff["slow.example"].IsZero() {
		t.Fatal("the hold-off reached etcd while old was cut off: the test proves nothing")
	}
	if err := newNode.MaySend(0); err == nil {
		t.Fatal("new may send at once after an unclean takeover")
	}
	proxy.Restore()
	waitFor(t, 10*time.Second, "new may send", func() bool { return newNode.MaySend(0) == nil })
	holds, ok := hNew.readyHoldOffs(0)
	if !ok {
		t.Fatal("new may send, and Handler.Ready was not called")
	}
	if got := holds["slow.example"]; !got.Equal(until) {
		t.Errorf("new's hold-off of slow.example before its first request: %v, want %v (Ready had %v)", got, until, holds)
	}
	if got := holdOffIn(t, newNode, 0, "slow.example"); !got.Equal(until) {
		t.Errorf("hold-off in etcd: %v, want %v", got, until)
	}
	// One written later still reaches the owner's crawl (its watch).
	later := until.Add(time.Minute)
	if err := old.PutHoldOff(context.Background(), 0, "late.example", later); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "new's handler has the later hold-off", func() bool {
		holds, _ := hNew.readyHoldOffs(0)
		return holds["late.example"].Equal(later)
	})
}

// A hold-off is only ever extended: a shorter one written later (by any
// node) leaves the longer one, a longer one replaces it, and its key
// lives as long as the longest.
func TestHoldOffOnlyExtends(t *testing.T) {
	_, cli := newFleet(t, 2)
	h := newHandler("a", nil)
	a := startNode(t, cli, "a", h)
	now := time.Now().Truncate(time.Millisecond)
	ctx := context.Background()
	for _, step := range []struct {
		until, want time.Time
	}{
		{now.Add(2 * time.Hour), now.Add(2 * time.Hour)},
		{now.Add(time.Hour), now.Add(2 * time.Hour)}, // shorter: kept
		{now.Add(3 * time.Hour), now.Add(3 * time.Hour)},
		{now.Add(-time.Hour), now.Add(3 * time.Hour)}, // past: nothing to write
	} {
		if err := a.PutHoldOff(ctx, 1, "busy.example", step.until); err != nil {
			t.Fatal(err)
		}
		if got := holdOffIn(t, a, 1, "busy.example"); !got.Equal(step.want) {
			t.Errorf("after a hold-off until +%v: %v, want +%v", step.until.Sub(now), got.Sub(now), step.want.Sub(now))
		}
	}
	resp, err := cli.Get(ctx, shardKey(1, holdOffLeaf+"busy.example"))
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("hold-off key: %v %v", resp, err)
	}
	ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(resp.Kvs[0].Lease))
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Duration(ttl.TTL) * time.Second; left < 3*time.Hour-time.Minute {
		t.Errorf("the hold-off's key runs out in %v, before the hold-off (3h)", left)
	}
	for _, bad := range []struct {
		shard  int
		domain string
	}{{2, "ok.example"}, {-1, "ok.example"}, {0, ""}, {0, "a/b"}} {
		if err := a.PutHoldOff(ctx, bad.shard, bad.domain, now.Add(time.Hour)); err == nil || errors.Is(err, ErrHoldOffPending) {
			t.Errorf("PutHoldOff(%d, %q): %v, want a refusal", bad.shard, bad.domain, err)
		}
	}
}

// Hold-offs etcd did not take are kept in NodeOptions.HoldOffFile: a node
// killed before etcd answers again writes them when it starts again.
func TestHoldOffFileSurvivesCrash(t *testing.T) {
	c, cli := newFleet(t, 1)
	file := filepath.Join(t.TempDir(), "fleet-holdoffs.json")
	withFile := func(o *NodeOptions) { o.HoldOffFile = file }
	proxy := etcdtest.NewProxy(t, c.Endpoints[0][len("http://"):])
	a := startNode(t, c.ClientOf(t, proxy.Endpoint()), "a", newHandler("a", nil), withFile)
	proxy.Cut()
	defer proxy.Restore()
	waitFor(t, 5*time.Second, "a's deadline passed", func() bool { return errors.Is(a.MaySend(0), ErrDeadline) })
	until := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	if err := a.PutHoldOff(context.Background(), 0, "slow.example", until); !errors.Is(err, ErrHoldOffPending) {
		t.Fatalf("PutHoldOff cut off: %v", err)
	}
	if _, err := os.Stat(file); err != nil {
		t.Fatalf("pending hold-off not saved: %v", err)
	}
	a.abandon() // killed: no release, nothing written
	b := startNode(t, cli, "b", newHandler("b", nil), withFile)
	if got := holdOffIn(t, b, 0, "slow.example"); !got.Equal(until) {
		t.Errorf("hold-off in etcd after the restart: %v, want %v", got, until)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the file of pending hold-offs is left once they are written: %v", err)
	}
	// A damaged file is an error naming it, not a silent loss.
	if err := os.WriteFile(file, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := StartNode(context.Background(), cli, NodeOptions{Name: "c", Handler: newHandler("c", nil), Timing: fastTiming(), HoldOffFile: file})
	if err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("StartNode with a damaged hold-off file: %v", err)
	}
}
