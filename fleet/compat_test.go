package fleet

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/fleet/etcdtest"
)

// apiScenario exercises every etcd call the fleet makes (lease grant,
// keep-alive, revoke, time-to-live; transactions with create and mod
// revision compares, puts with leases, deletes with previous values;
// prefix reads and watches; concurrency.Session and Mutex) against a
// cluster, so that it can be run on a server of another version.
func apiScenario(t *testing.T, c *etcdtest.Cluster) {
	cli := c.Client(t)
	c.WaitHealthy(t, 15*time.Second)
	initFleet(t, cli, 4)
	ctx := context.Background()
	ha, hb := newHandler("a", nil), newHandler("b", nil)
	a := startNode(t, cli, "a", ha)
	b := startNode(t, cli, "b", hb)
	waitFor(t, 15*time.Second, "shards split 2/2 and started", func() bool {
		return len(ownedShards(a)) == 2 && len(ownedShards(b)) == 2 && ha.started()+hb.started() >= 4
	})
	st, err := ReadStatus(ctx, cli, c.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range st.Nodes {
		if ns.LeaseTTLLeft <= 0 || ns.LeaseTTLLeft > 2 || len(ns.Shards) != 2 {
			t.Errorf("node status %+v", ns)
		}
	}
	// The pace compare-and-swap.
	ip := netip.MustParseAddr("203.0.113.9")
	s1, err := a.ReserveIP(ctx, ip, 50*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := b.ReserveIP(ctx, ip, 50*time.Millisecond)
	if err != nil || s2.Sub(s1) < 50*time.Millisecond {
		t.Errorf("pace: %v then %v (%v)", s1, s2, err)
	}
	// The rebuild lock and barrier.
	lock, err := LockRebuild(ctx, cli, "mapthenet rebuild", 2*time.Second, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	answers, err := lock.CollectExports(ctx, "compat", "", 10*time.Second, time.Now())
	if err != nil || len(answers) != 4 {
		t.Errorf("barrier: %d answers, %v", len(answers), err)
	}
	if err := lock.Unlock(ctx); err != nil {
		t.Error(err)
	}
	// A clean leave hands b every shard under larger tokens.
	tokens := map[int]int64{}
	for _, o := range a.Owned() {
		tokens[o.Shard] = o.Token
	}
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := a.Close(closeCtx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "b holds all 4", func() bool { return len(ownedShards(b)) == 4 })
	for _, o := range b.Owned() {
		if old, moved := tokens[o.Shard]; moved && o.Token <= old {
			t.Errorf("shard %d: token %d after %d", o.Shard, o.Token, old)
		}
	}
}

func TestAPIEmbedded(t *testing.T) {
	apiScenario(t, etcdtest.Embedded(t, 1))
}

// Debian's etcd-server (3.4), as an operator installs it, with this
// client (3.7): three processes on loopback. Skipped without the binary
// unless MAPTHENET_REQUIRE_ETCD=1 (.ci/run installs it).
func TestDebianEtcdServer(t *testing.T) {
	etcdtest.Binary(t) // skip (or fail) once, saying why
	t.Run("api", func(t *testing.T) { apiScenario(t, etcdtest.Processes(t, 3)) })
	t.Run("quorum", func(t *testing.T) { quorumScenario(t, etcdtest.Processes(t, 3)) })
}
