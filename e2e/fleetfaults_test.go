package e2e

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet/etcdtest"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/simweb"
)

// Faults of a crawl fleet at the crawl level (issue 17), each checked
// against the simulated web's own request log, fleet-wide, and against
// the snapshot a fleet rebuild makes afterwards (no visit lost). The
// fleet is fleetFixture's: 3 etcd processes, 3 node processes, a 2 s
// lease TTL.

// TestFleetPausedNode stops a node with SIGSTOP mid-crawl for twice its
// lease TTL, then lets it go on (SIGCONT). Its lease ran out meanwhile
// and the others took its shards: once awake it must send nothing for a
// shard until it has taken that shard again (each request is told apart
// by the signing key of the node that sent it), no two nodes may be at
// one site at once, and every site is visited.
func TestFleetPausedNode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an etcd cluster and three crawl processes (about 35 s)")
	}
	f := newFleet(t)
	w := f.r.web
	// One site at a time per node, so that the paused node still has
	// sites to visit when it wakes.
	nodes := f.startNodes(t, 3, now, "--max-sites-in-flight", "1")
	victim := nodes[2]
	victim.waitFor(t, "a recorded visit on n2", 60*time.Second, func() bool { return len(victim.logged("visit recorded")) > 0 })
	// Stopped in the middle of a visit, when it has just sent a page
	// request: awake, it would send the next one at once if nothing
	// stopped it.
	key := nodeKeyID(t, f.nodeDir(2))
	waitMidVisit(t, w, key, "n2")
	if err := victim.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	time.Sleep(2 * fleetTTL)
	if err := victim.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	woke := time.Now()
	t.Logf("n2 stopped for %v after %d recorded visits", woke.Sub(stopped).Round(time.Millisecond), len(victim.logged("visit recorded")))
	victim.waitFor(t, "n2 taking a shard again", 60*time.Second, func() bool { return len(tookSince(victim, woke)) > 0 })
	held := waitVisitedOrHeld(t, f, nodes, 90*time.Second)
	checkHoldOffsWritten(t, f, nodes)
	t.Logf("every site visited %v after n2 woke", time.Since(woke).Round(time.Millisecond))
	fleetRebuild(t, f.bin, f.etcd.URL(), f.snaps, f.admin(), now.Add(time.Hour))
	stopFleet(t, nodes)

	reqs := w.Requests()
	checkFleetLog(t, w, reqs, 0, true) // n2's shards moved, twice
	others := 0
	for _, n := range nodes[:2] {
		others += len(tookSince(n, stopped))
	}
	if others == 0 {
		t.Error("n0 and n1 took none of n2's shards while it was stopped")
	}
	// What n2 sent after it woke: only for shards it had taken again
	// since, and after it took them.
	router, err := shard.NewRouter(fleetShards, []string{"github.io"})
	if err != nil {
		t.Fatal(err)
	}
	retaken := tookSince(victim, woke)
	before, after := 0, 0
	for _, r := range reqs {
		if signedBy(r) != key {
			continue
		}
		if !r.Start.After(woke) {
			before++
			continue
		}
		after++
		s := router.Of(r.Site)
		if at, ok := retaken[s]; !ok || r.Start.Before(at) {
			t.Errorf("n2 sent %s://%s%s (shard %d) at %v, %v after it woke, before it took that shard again (took: %v)",
				r.Scheme, r.Host, r.Path, s, r.Start.Format(time.StampMilli), r.Start.Sub(woke).Round(time.Millisecond), retaken)
		}
	}
	if before == 0 {
		t.Error("n2 sent no request before it was stopped: the test proves nothing")
	}
	if t.Failed() {
		t.Logf("n2's log:\n%s", victim.log())
	}
	t.Logf("n2 sent %d requests before it woke, %d after (shards taken again: %v)", before, after, retaken)
	lostWithShard(t, f, nodes, victim, stopped, woke, held)
	checkVisitedInSnapshot(t, f, slices.DeleteFunc(slices.Clone(f.seeds), func(d string) bool { return held[d] }))
}

// couldNotHoldOff is a node's warning that a site's wait (429, 503, a
// block) was not recorded in etcd at once (the node keeps it and writes
// it when etcd answers again).
const couldNotHoldOff = "a site's wait not recorded in the fleet yet"

// waitVisitedOrHeld waits until every site of the web has a recorded
// visit or asked to be left alone: it has a hold-off in etcd, or a node
// said it could not write one there yet. Such a site's visit is not
// recorded when it ended after the node's deadline (its commit was
// fenced, as when etcd has no quorum): the site stays due and is asked
// again only when its wait is over (the request log shows nothing after
// its 429 or 503). It returns those sites. Every wait a node could not
// write at once must have reached etcd by then (checkHoldOffsWritten).
func waitVisitedOrHeld(t *testing.T, f *fleetFixture, nodes []*opsProc, timeout time.Duration) map[string]bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		seen := visitedBy(nodes)
		held := holdOffs(t, f.etcd)
		for _, n := range nodes {
			for _, d := range n.logged(couldNotHoldOff) {
				held[d] = true
			}
		}
		var missing []string
		for _, d := range f.seeds {
			if !seen[d] && !held[d] {
				missing = append(missing, d)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			waitVisited(t, nodes, missing, 0) // fails, with the nodes' logs, if any is missing
			unrecorded := map[string]bool{}
			for d := range held {
				if !seen[d] {
					unrecorded[d] = true
				}
			}
			if len(unrecorded) > 0 {
				t.Logf("sites that asked to be left alone, their visit not recorded: %v", slices.Sorted(maps.Keys(unrecorded)))
			}
			return unrecorded
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkHoldOffsWritten: every site's wait a node logged as not recorded
// in etcd yet is there now (the node wrote it once etcd answered again),
// so that any later owner of the site's shard honours it.
func checkHoldOffsWritten(t *testing.T, f *fleetFixture, nodes []*opsProc) {
	t.Helper()
	var pending []string
	for _, n := range nodes {
		pending = append(pending, n.logged(couldNotHoldOff)...)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		inEtcd := holdOffs(t, f.etcd)
		missing := slices.DeleteFunc(slices.Clone(pending), func(d string) bool { return inEtcd[d] })
		if len(missing) == 0 {
			if len(pending) > 0 {
				t.Logf("sites' waits written to etcd after it answered again: %v", pending)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("sites' waits a node could not write at once, still not in etcd: %v", missing)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// tookSince maps each shard n logged taking after t to the first such time.
func tookSince(n *opsProc, t time.Time) map[int]time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[int]time.Time{}
	for _, line := range n.lines {
		at := logTime(line)
		if line["msg"] != "took shard" || !at.After(t) {
			continue
		}
		s, ok := line["shard"].(float64)
		if _, seen := out[int(s)]; ok && !seen {
			out[int(s)] = at
		}
	}
	return out
}

// nodeKeyID is the keyid of the one signing key in a node's data dir
// (each node makes its own): it tells the node's requests apart.
func nodeKeyID(t *testing.T, dir string) string {
	t.Helper()
	keys, err := filepath.Glob(filepath.Join(dir, "keys", "*.jwk"))
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys of %s: %v %v", dir, keys, err)
	}
	return strings.TrimSuffix(filepath.Base(keys[0]), ".jwk")
}

var keyIDParam = regexp.MustCompile(`keyid="([^"]+)"`)

// signedBy is the keyid a request was signed with ("" unsigned).
func signedBy(r simweb.Request) string {
	if m := keyIDParam.FindStringSubmatch(r.SignatureInput); m != nil {
		return m[1]
	}
	return ""
}

// lostWithShard adds to held the sites whose visit victim recorded (before
// until) on a shard another node then took from it without a handoff
// (after from), and that told a node to wait (a hold-off in etcd), unless
// another node recorded a visit of them too. DESIGN.md: the visits a node
// made since its shard's last backup are lost with it and made again by
// the next owner; a site that asked to wait is asked again only after its
// wait, which outlasts the test. (TestFleetNodeCutOff failed once on
// throttle-429.example: held, recorded, and not in the snapshot.)
func lostWithShard(t *testing.T, f *fleetFixture, nodes []*opsProc, victim *opsProc, from, until time.Time, held map[string]bool) {
	t.Helper()
	router, err := shard.NewRouter(fleetShards, []string{"github.io"})
	if err != nil {
		t.Fatal(err)
	}
	takenUnclean := map[int]bool{}
	byOthers := map[string]bool{}
	for _, n := range nodes {
		if n == victim {
			continue
		}
		for s := range tookUncleanIn(n, from, until.Add(time.Hour)) {
			takenUnclean[s] = true
		}
		for _, d := range n.logged("visit recorded") {
			byOthers[d] = true
		}
	}
	inEtcd := holdOffs(t, f.etcd)
	victim.mu.Lock()
	defer victim.mu.Unlock()
	for _, line := range victim.lines {
		d, _ := line["domain"].(string)
		if line["msg"] != "visit recorded" || !logTime(line).Before(until) || held[d] || byOthers[d] || !inEtcd[d] || !takenUnclean[router.Of(d)] {
			continue
		}
		held[d] = true
		t.Logf("%s: told a node to wait; its visit recorded on the node that lost shard %d without a handoff need not reach the snapshot", d, router.Of(d))
	}
}

// checkVisitedInSnapshot: in the admin directory's current snapshot (a
// fleet rebuild's), every domain has a visit.
func checkVisitedInSnapshot(t *testing.T, f *fleetFixture, domains []string) {
	t.Helper()
	rows := map[string]data.DomainRow{}
	for _, d := range readSnapshot[data.DomainRow](t, &run{dir: f.admin()}, "domains.parquet") {
		rows[d.Domain] = d
	}
	for _, d := range domains {
		if rows[d].LastVisit == nil {
			t.Errorf("%s: no visit in the fleet rebuild's snapshot", d)
		}
	}
}

// waitUntil polls cond every millisecond until it holds, failing the
// test after timeout.
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("no %s within %v", what, timeout)
		}
		time.Sleep(time.Millisecond)
	}
}

// isRobots: a robots.txt request (or one of its redirect hops).
func isRobots(path string) bool { return strings.HasPrefix(path, "/robots.txt") }

// stopFleet stops every node at once (SIGTERM), so that their shards do
// not move from one to the next as they leave, and checks they exit 0.
func stopFleet(t *testing.T, nodes []*opsProc) {
	t.Helper()
	for _, n := range nodes {
		if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range nodes {
		if code := n.wait(t, 20*time.Second); code != 0 {
			t.Fatalf("node exit %d after SIGTERM:\n%s", code, n.log())
		}
	}
}

// etcdElection is the election timeout of the test's etcd members
// (etcd's default).
const etcdElection = time.Second

// TestFleetEtcdQuorum kills etcd members under a crawling fleet. One of
// three (the leader): nothing changes, no node even misses a renewal.
// Two of three: every node stops sending within its deadline (the last
// renewal + TTL − margin, plus up to two election timeouts as the member
// left was the leader), so no request starts later than that (nor ends
// later than that + the response timeout); once the members are back the crawl
// resumes by itself, every site is visited and the log is clean.
func TestFleetEtcdQuorum(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an etcd cluster and three crawl processes (about 40 s)")
	}
	f := newFleet(t)
	w := f.r.web
	// One site at a time per node, at 60 ms a page (the checks ask 20 ms
	// or more), so that the crawl lasts through both faults.
	nodes := f.startNodes(t, 3, now, "--max-sites-in-flight", "1", "--min-delay", "60ms")
	for i, n := range nodes {
		n.waitFor(t, fmt.Sprintf("a recorded visit on n%d", i), 60*time.Second, func() bool { return len(n.logged("visit recorded")) > 0 })
	}
	const lapsed = "fleet lease not renewed in time: no requests until etcd answers again"

	// One member, a follower, killed for longer than a lease TTL. (Not
	// the leader: at this test's 2 s TTL, renewals stop for the election
	// that follows, up to two election timeouts, which is longer than the
	// deadline's TTL − margin; at the default 10 s TTL it is not.)
	member := (etcdLeader(t, f.etcd) + 1) % len(f.etcd.Endpoints)
	killed1 := time.Now()
	f.etcd.Kill(member)
	time.Sleep(fleetTTL + etcdElection)
	back1 := time.Now()
	f.etcd.Restart(member)
	f.etcd.WaitHealthy(t, 30*time.Second)
	if n := len(startedIn(w.Requests(), killed1.Add(fleetTTL), back1)); n == 0 {
		t.Errorf("no request started from %v after etcd member %d was killed until it was back", fleetTTL, member)
	}
	for i, n := range nodes {
		if l := n.logged(lapsed); len(l) > 0 {
			t.Errorf("n%d missed its lease deadline with one etcd member of three down", i)
		}
	}
	t.Logf("etcd member %d (a follower) down for %v: no effect", member, back1.Sub(killed1).Round(time.Millisecond))

	// Two members, the followers, killed: the one left is the leader,
	// which may renew leases a little longer (the worst case).
	leader := etcdLeader(t, f.etcd)
	var followers []int
	for i := range f.etcd.Endpoints {
		if i != leader {
			followers = append(followers, i)
		}
	}
	remaining := len(f.seeds) - len(visitedBy(nodes))
	killed2 := time.Now()
	if n := len(startedIn(w.Requests(), killed2.Add(-time.Second), killed2)); n == 0 {
		t.Fatalf("no request in the second before the quorum was lost (%d sites left to visit): the test would prove nothing", remaining)
	}
	for _, i := range followers {
		f.etcd.Kill(i)
	}
	time.Sleep(2*fleetTTL + etcdElection)
	back2 := time.Now()
	for _, i := range followers {
		f.etcd.Restart(i)
	}
	f.etcd.WaitHealthy(t, 30*time.Second)
	healthy := time.Now()
	// The deadline: the last renewal + TTL − margin. The leader left
	// alone goes on renewing until its check of the quorum fails: raft
	// checks once an election timeout, and the check just after the loss
	// may still count the followers' last answers, so up to two.
	stopBy := killed2.Add(fleetTTL - fleetTTL/5 + 2*etcdElection + skewMargin)
	reqs := w.Requests()
	var last time.Time
	for _, r := range startedIn(reqs, killed2, back2) {
		if r.Start.After(last) {
			last = r.Start
		}
		if r.Start.After(stopBy) {
			t.Errorf("%s://%s%s started %v after the quorum was lost (limit %v)", r.Scheme, r.Host, r.Path,
				r.Start.Sub(killed2).Round(time.Millisecond), stopBy.Sub(killed2))
		}
		if r.End.After(stopBy.Add(fleetResponseTimeout)) {
			t.Errorf("%s://%s%s ended %v after the quorum was lost (limit %v)", r.Scheme, r.Host, r.Path,
				r.End.Sub(killed2).Round(time.Millisecond), stopBy.Add(fleetResponseTimeout).Sub(killed2))
		}
	}
	for i, n := range nodes {
		if len(n.logged(lapsed)) == 0 {
			t.Errorf("n%d never said it stopped for want of a lease renewal", i)
		}
	}
	t.Logf("quorum lost for %v with %d of %d sites left: the last request started %v after, quorum back after a further %v",
		back2.Sub(killed2).Round(time.Millisecond), remaining, len(f.seeds), last.Sub(killed2).Round(time.Millisecond), healthy.Sub(back2).Round(time.Millisecond))

	held := waitVisitedOrHeld(t, f, nodes, 90*time.Second)
	checkHoldOffsWritten(t, f, nodes)
	if r := startedIn(w.Requests(), back2, time.Now()); len(r) == 0 {
		t.Error("no request after the quorum came back")
	} else {
		t.Logf("requests resumed %v after the members were restarted; every site visited %v after", r[0].Start.Sub(back2).Round(time.Millisecond),
			time.Since(back2).Round(time.Millisecond))
	}
	fleetRebuild(t, f.bin, f.etcd.URL(), f.snaps, f.admin(), now.Add(time.Hour))
	stopFleet(t, nodes)
	// A visit cut off at the deadline is made again, whole, when requests
	// resume (as one cut off by a shard move): its repeated pages are
	// counted, every other promise checked.
	checkFleetLog(t, w, w.Requests(), 0, true)
	checkVisitedInSnapshot(t, f, slices.DeleteFunc(slices.Clone(f.seeds), func(d string) bool { return held[d] }))
}

// skewMargin and fleetResponseTimeout are the nodes' clock-skew margin
// (fleet's default) and --response-timeout (fleetCrawlFlags).
const (
	skewMargin           = 250 * time.Millisecond
	fleetResponseTimeout = 3 * time.Second
)

// startedIn lists the requests that started in (from, to], in start order.
func startedIn(reqs []simweb.Request, from, to time.Time) []simweb.Request {
	var out []simweb.Request
	for _, r := range reqs {
		if r.Start.After(from) && !r.Start.After(to) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b simweb.Request) int { return a.Start.Compare(b.Start) })
	return out
}

// visitedBy is the set of domains the nodes logged a recorded visit of.
func visitedBy(nodes []*opsProc) map[string]bool {
	seen := map[string]bool{}
	for _, n := range nodes {
		for _, d := range n.logged("visit recorded") {
			seen[d] = true
		}
	}
	return seen
}

// etcdLeader is the index of the cluster's leader.
func etcdLeader(t *testing.T, c *etcdtest.Cluster) int {
	t.Helper()
	cli := c.Client(t)
	for range 50 {
		for i, ep := range c.Endpoints {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			st, err := cli.Status(ctx, ep)
			cancel()
			if err == nil && st.Header.MemberId == st.Leader {
				return i
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatal("no etcd leader found")
	return -1
}

// waitMidVisit waits until the node whose signing key is key has just sent
// a page request (not robots.txt) and is in the middle of a visit: stopped
// or cut off then, it would send the next request at once if nothing
// stopped it.
func waitMidVisit(t *testing.T, w *simweb.Web, key, node string) {
	t.Helper()
	waitUntil(t, node+" in the middle of a visit", 30*time.Second, func() bool {
		reqs := w.Requests()
		for i := len(reqs) - 1; i >= 0; i-- {
			if signedBy(reqs[i]) == key {
				return !isRobots(reqs[i].Path) && time.Since(reqs[i].Start) < 10*time.Millisecond
			}
		}
		return false
	})
}
