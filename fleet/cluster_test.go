package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/fleet/etcdtest"
)

// quorumTiming rides out a leader election without a missed deadline:
// the leader may die just before a renewal was due, so the deadline is at
// least 2·TTL/3 − margin (4.3 s) after it; the followers' election timeout
// (randomized, 1 to 2 s), a pre-vote, a vote and the client's move to
// another member took up to 4 s on a loaded machine (a 5 s TTL, 2.3 s of
// room, failed: "3.981s after killing the leader: lease deadline passed").
func quorumTiming() Timing {
	return Timing{TTL: 8 * time.Second, Margin: time.Second, ResponseTimeout: 50 * time.Millisecond, ClockSkew: -1}
}

// skipTakeoverWait lets a test's node send at once for what it holds (the
// takeover wait is tested elsewhere; here it would only cost time).
func skipTakeoverWait(n *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range n.shards {
		h.grant.ReadyAt = n.clock.Now()
		if h.state == active {
			h.ready = true // as if its hold-offs had been read again
		}
	}
}

// leaderIndex is the index of the cluster's leader among its endpoints.
func leaderIndex(t *testing.T, c *etcdtest.Cluster, skip ...int) int {
	t.Helper()
	cli := c.Client(t)
	for try := 0; try < 100; try++ {
		for i, ep := range c.Endpoints {
			if containsInt(skip, i) {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := cli.Status(ctx, ep)
			cancel()
			if err == nil && st.Leader != 0 && st.Leader == st.Header.MemberId {
				return i
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no leader found")
	return -1
}

// quorumScenario: with one of three members killed (the leader) a node
// keeps sending throughout; with two killed it stops within its deadline
// (fail closed, holding its shards) and resumes by itself once they are
// back.
//
// A leader that has lost its quorum goes on renewing leases until it
// steps down (3.7 checks only that it is not stuck: etcd-io/etcd#15247),
// up to two election timeouts later: raft's CheckQuorum runs once an
// election timeout and counts the answers since the previous check, so a
// follower that answered just after one check still counts at the next
// (fleet/doc.go, DESIGN.md "Deadline"). So requests may stop up to
// TTL − margin + two election timeouts after quorum is lost. That is
// safe: a new leader extends every lease by an election timeout
// (etcd-io/etcd#4778), so a lease outlives any deadline a stale leader's
// renewal gave.
func quorumScenario(t *testing.T, c *etcdtest.Cluster) {
	const electionTimeout = time.Second // etcd's default, in both clusters
	cli := c.Client(t)
	c.WaitHealthy(t, 15*time.Second)
	initFleet(t, cli, 2)
	timing := quorumTiming()
	h := newHandler("a", nil)
	n := startNode(t, cli, "a", h, func(o *NodeOptions) { o.Timing = timing })
	waitFor(t, 10*time.Second, "a started both shards", func() bool { return h.started() == 2 })
	skipTakeoverWait(n)
	waitFor(t, time.Second, "a may send for both", func() bool { return len(readyShards(n)) == 2 })

	first := leaderIndex(t, c)
	c.Kill(first)
	killed := time.Now()
	for time.Since(killed) < timing.TTL+time.Second {
		if err := n.MaySend(0); err != nil {
			t.Fatalf("%v after killing the leader (1 of 3): %v", time.Since(killed).Round(time.Millisecond), err)
		}
		time.Sleep(20 * time.Millisecond)
	}

	second := (first + 1) % 3
	c.Kill(second)
	killed = time.Now()
	// The bound: TTL − margin + two election timeouts, and a quarter
	// second for raft's ticks, which a loaded machine delays (ten ticks
	// make an election timeout) and for the old leader's own view of its
	// step-down to catch up with raft's.
	limit := timing.TTL - timing.Margin + 2*electionTimeout + 250*time.Millisecond
	var stopped time.Duration
	for {
		// The time is read before MaySend: an answer of yes is then
		// proof that the node still sent at least that long after quorum
		// was lost, however late this goroutine runs.
		asked := time.Since(killed)
		err := n.MaySend(0)
		if err != nil {
			if !errors.Is(err, ErrDeadline) {
				t.Fatalf("MaySend without quorum: %v, want ErrDeadline", err)
			}
			// When the node stopped is its deadline, not when this poll
			// ran: no renewal can move it without quorum.
			stopped = n.Deadline().Sub(killed)
			break
		}
		if asked > limit {
			t.Fatalf("still sending %v after quorum was lost, later than TTL − margin + two election timeouts (%v)", asked, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if stopped > limit {
		t.Errorf("requests stopped %v after quorum was lost, later than TTL − margin + two election timeouts (%v)", stopped, limit)
	}
	t.Logf("quorum lost: requests stopped after %v", stopped.Round(time.Millisecond))
	if len(ownedShards(n)) != 2 || h.lostStops() != 0 {
		t.Errorf("without quorum the node gave up shards (held %d, lost %d): it should hold them and wait", len(ownedShards(n)), h.lostStops())
	}
	time.Sleep(500 * time.Millisecond)
	if err := n.MaySend(1); !errors.Is(err, ErrDeadline) {
		t.Errorf("shard 1 without quorum: %v", err)
	}

	c.Restart(first)
	c.Restart(second)
	back := time.Now()
	waitFor(t, 30*time.Second, "requests resume after quorum returns", func() bool {
		if len(readyShards(n)) == 2 {
			return true
		}
		skipTakeoverWait(n) // if the lease ran out meanwhile, the shards were taken again
		return false
	})
	t.Logf("quorum back: requests resumed after %v (%d grants, %d lost)", time.Since(back).Round(time.Millisecond), len(h.allGrants()), h.lostStops())
}

func TestQuorumEmbedded(t *testing.T) {
	quorumScenario(t, etcdtest.Embedded(t, 3))
}
