package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/fleet/etcdtest"
	"github.com/mapthenet/mapthenet/shard"
)

// netnsLinks is a network namespace of a test's own, joined to the root
// namespace by two veth pairs with private addresses: one that carries
// the node's traffic to etcd, one its traffic to the web. Cutting the
// first (link down) cuts the node off from etcd while it can still reach
// the web, the case where only its own deadline stops its requests.
type netnsLinks struct {
	ip   string // the ip command
	name string // the namespace
	// etcdDev and webDev are the root namespace's ends of the pairs;
	// etcdHost and webHost their addresses (the namespace's ends are the
	// next address up).
	etcdDev, webDev   string
	etcdHost, webHost string
}

// newNetnsLinks makes the namespace and its links, removed when the test
// ends (even when it fails). Without root or the ip command, or where the
// kernel refuses a namespace, it skips saying why, unless
// MAPTHENET_REQUIRE_NETNS=1 (then it fails).
func newNetnsLinks(t *testing.T) *netnsLinks {
	t.Helper()
	unavailable := func(why string) {
		t.Helper()
		if os.Getenv("MAPTHENET_REQUIRE_NETNS") == "1" {
			t.Fatalf("MAPTHENET_REQUIRE_NETNS=1, and no network namespace can be made here: %s", why)
		}
		t.Skipf("no network namespace can be made here (%s): the test of a node cut off from etcd needs one (root and iproute2's ip)", why)
	}
	if os.Geteuid() != 0 {
		unavailable("not root")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		unavailable("no ip command")
	}
	var id [4]byte
	rand.Read(id[:])
	tag := hex.EncodeToString(id[:]) // unique names: parallel runs cannot collide
	n := &netnsLinks{ip: ip, name: "mtn-" + tag, etcdDev: "mte" + tag, webDev: "mtw" + tag}
	if out, err := exec.Command(ip, "netns", "add", n.name).CombinedOutput(); err != nil {
		unavailable(fmt.Sprintf("ip netns add: %v: %s", err, strings.TrimSpace(string(out))))
	}
	t.Cleanup(func() {
		// Deleting the namespace deletes the ends inside it, and so the
		// pairs; the root ends go too in case a pair never moved in.
		for _, args := range [][]string{{"netns", "delete", n.name}, {"link", "delete", n.etcdDev}, {"link", "delete", n.webDev}} {
			exec.Command(ip, args...).Run()
		}
	})
	// A /29 of 10/8 no interface here uses: .1-.2 for etcd, .5-.6 for the web.
	var net8 string
	for range 20 {
		a, _ := rand.Int(rand.Reader, big.NewInt(150))
		b, _ := rand.Int(rand.Reader, big.NewInt(32))
		net8 = fmt.Sprintf("10.%d.%d.", 100+a.Int64(), 8*b.Int64())
		out, _ := exec.Command(ip, "-o", "-4", "addr", "show").Output()
		if !strings.Contains(string(out), " "+net8) {
			break
		}
	}
	n.etcdHost, n.webHost = net8+"1", net8+"5"
	inNS := func(args ...string) []string { return append([]string{"netns", "exec", n.name, ip}, args...) }
	for _, pair := range []struct{ dev, host, peer string }{
		{n.etcdDev, n.etcdHost, net8 + "2"}, {n.webDev, n.webHost, net8 + "6"},
	} {
		peer := pair.dev + "p"
		for _, args := range [][]string{
			{"link", "add", pair.dev, "type", "veth", "peer", "name", peer},
			{"link", "set", peer, "netns", n.name},
			{"addr", "add", pair.host + "/30", "dev", pair.dev},
			{"link", "set", pair.dev, "up"},
			inNS("addr", "add", pair.peer+"/30", "dev", peer),
			inNS("link", "set", peer, "up"),
		} {
			n.run(t, args...)
		}
	}
	n.run(t, inNS("link", "set", "lo", "up")...)
	return n
}

func (n *netnsLinks) run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(n.ip, args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// exec is the prefix that runs a command inside the namespace.
func (n *netnsLinks) exec() []string { return []string{n.ip, "netns", "exec", n.name} }

// setEtcdLink takes the link to etcd down (false) or up (true).
func (n *netnsLinks) setEtcdLink(t *testing.T, up bool) {
	t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	n.run(t, "link", "set", n.etcdDev, state)
}

// TestFleetNodeCutOff runs one of three crawl nodes in a network namespace
// of its own, reaching etcd through one veth pair and the web through
// another, and cuts its link to etcd mid-crawl (link down) while it can
// still reach the web. It must stop sending within its deadline (its last
// renewal + TTL − margin); the other two take its shards once its lease
// has run out and send nothing there before their takeover wait is over;
// when the link is back (within that wait) it sends nothing for a shard
// until it has taken that shard again, and the sites' waits it could not
// write to etcd reach the new owners. The web's request log is clean
// fleet-wide (nothing after a 429 or 503 included) and no visit is lost.
func TestFleetNodeCutOff(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an etcd cluster and three crawl processes, one in a network namespace (about 35 s)")
	}
	ns := newNetnsLinks(t)
	f := newFleet(t)
	w := f.r.web
	// The namespace reaches the etcd members and the web through
	// forwarders on the root ends of its links.
	var eps []string
	for _, ep := range f.etcd.Endpoints {
		eps = append(eps, etcdtest.NewProxyOn(t, ns.etcdHost+":0", strings.TrimPrefix(ep, "http://")).Addr())
	}
	web := etcdtest.NewProxyOn(t, ns.webHost+":0", w.Addr())

	// A longer response timeout than the other fleet tests': the
	// takeover wait (TTL + it + skew) must leave n2 time to reconnect
	// once the link is back (measured: 0.4 to 3.3 s).
	const responseTimeout = 6 * time.Second
	nodeFlags := []string{"--max-sites-in-flight", "1", "--response-timeout", responseTimeout.String()}
	nodes := f.startNodes(t, 2, now, nodeFlags...)
	// n2: the web only through --connect-to to the private address (an
	// operator's explicit choice, exempt from the public-address guard).
	args := fleetCrawlFlags(f.r, now)
	args[slices.Index(args, "--connect-to")+1] = "::" + web.Addr()
	args = append(args, "--fleet", "etcd://"+strings.Join(eps, ","), "--node", "n2", "--snapshots", f.snaps,
		"--lease-ttl", fleetTTL.String(), "--recheck", "1s")
	args = append(args, nodeFlags...)
	victim := startOpsIn(t, ns.exec(), f.bin, f.nodeDir(2), args...)
	nodes = append(nodes, victim)
	victim.waitFor(t, "a recorded visit on n2", 60*time.Second, func() bool { return len(victim.logged("visit recorded")) > 0 })

	// Cut in the middle of a visit, when n2 has just sent a page request.
	key := nodeKeyID(t, f.nodeDir(2))
	waitMidVisit(t, w, key, "n2")
	ns.setEtcdLink(t, false)
	cut := time.Now()
	// The others take n2's shards once its lease has run out, and send
	// there after their takeover wait. The link comes back as soon as they
	// took one, inside that wait: a site that told n2 to wait just before
	// or after the cut (etcd could not take it) reaches their first
	// request through n2's pending hold-offs. (Later than their wait, it
	// would reach them only after it: DESIGN.md's bound.)
	waitUntil(t, "n0 or n1 taking one of n2's shards", 30*time.Second, func() bool {
		return len(tookSince(nodes[0], cut))+len(tookSince(nodes[1], cut)) >= 1
	})
	ns.setEtcdLink(t, true)
	restored := time.Now()
	t.Logf("n2 cut off from etcd for %v after %d recorded visits", restored.Sub(cut).Round(time.Millisecond), len(victim.logged("visit recorded")))
	victim.waitFor(t, "n2 taking a shard again", 60*time.Second, func() bool { return len(tookSince(victim, restored)) > 0 })
	if at := firstLogged(victim, "joined the fleet", restored); !at.IsZero() {
		t.Logf("n2 joined the fleet again %v after the link came back", at.Sub(restored).Round(time.Millisecond))
	}
	held := waitVisitedOrHeld(t, f, nodes, 90*time.Second)
	checkHoldOffsWritten(t, f, nodes)
	t.Logf("every site visited %v after the link came back", time.Since(restored).Round(time.Millisecond))
	fleetRebuild(t, f.bin, f.etcd.URL(), f.snaps, f.admin(), now.Add(time.Hour))
	stopFleet(t, nodes)

	reqs := w.Requests()
	checkFleetLog(t, w, reqs, 0, true) // n2's shards moved, twice
	router, err := shard.NewRouter(fleetShards, []string{"github.io"})
	if err != nil {
		t.Fatal(err)
	}
	// n2: nothing started after its deadline (the last renewal, before
	// the cut, + TTL − margin) or ended later than that + the response
	// timeout, but for a shard it had taken again, after it took it.
	stopBy := cut.Add(fleetTTL - fleetTTL/5 + 50*time.Millisecond) // 50 ms: the request's way to the web's log
	retaken := tookSince(victim, cut)
	before, late := 0, 0
	for _, r := range reqs {
		if signedBy(r) != key || !r.Start.After(cut) {
			if signedBy(r) == key {
				before++
			}
			continue
		}
		s := router.Of(r.Site)
		if at, ok := retaken[s]; ok && !r.Start.Before(at) {
			continue
		}
		late++
		if r.Start.After(stopBy) || r.End.After(stopBy.Add(responseTimeout)) {
			t.Errorf("n2 sent %s://%s%s (shard %d) from %v to %v after the cut (limit: start by %v), before it took that shard again (took: %v)",
				r.Scheme, r.Host, r.Path, s, r.Start.Sub(cut).Round(time.Millisecond), r.End.Sub(cut).Round(time.Millisecond),
				stopBy.Sub(cut), retaken)
		}
	}
	if before == 0 {
		t.Error("n2 sent no request before the cut: the test proves nothing")
	}
	// n0 and n1: for each shard taken from n2 (no handoff), no request
	// before the takeover wait (TTL + response timeout + skew) was over.
	// (The log line comes just after the wait starts: 20 ms of slack.)
	wait := fleetTTL + responseTimeout + skewMargin - 20*time.Millisecond
	taken := 0
	for i, n := range nodes[:2] {
		nkey := nodeKeyID(t, f.nodeDir(i))
		for s, at := range tookUncleanIn(n, cut, restored.Add(fleetTTL)) {
			taken++
			for _, r := range reqs {
				if signedBy(r) == nkey && router.Of(r.Site) == s && !r.Start.Before(at) && r.Start.Before(at.Add(wait)) {
					t.Errorf("n%d sent %s://%s%s (shard %d) %v after taking it from n2, inside its takeover wait (%v)",
						i, r.Scheme, r.Host, r.Path, s, r.Start.Sub(at).Round(time.Millisecond), wait)
				}
			}
		}
	}
	if taken == 0 {
		t.Error("n0 and n1 took none of n2's shards while it was cut off")
	}
	if t.Failed() {
		t.Logf("n2's log:\n%s", victim.log())
	}
	t.Logf("n2 sent %d requests before the cut, %d after it before taking a shard again (shards taken again: %v); n0 and n1 took %d of its shards",
		before, late, retaken, taken)
	lostWithShard(t, f, nodes, victim, cut, restored, held)
	checkVisitedInSnapshot(t, f, slices.DeleteFunc(slices.Clone(f.seeds), func(d string) bool { return held[d] }))
}

// tookUncleanIn maps each shard n logged taking without a handoff (from
// an owner whose lease ran out) in (from, to] to the time it took it.
func tookUncleanIn(n *opsProc, from, to time.Time) map[int]time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[int]time.Time{}
	for _, line := range n.lines {
		at := logTime(line)
		if line["msg"] != "took shard" || line["clean_handoff"] != false || !at.After(from) || at.After(to) {
			continue
		}
		if s, ok := line["shard"].(float64); ok {
			out[int(s)] = at
		}
	}
	return out
}

// firstLogged is the time of n's first log line with message msg after
// from (zero: none).
func firstLogged(n *opsProc, msg string, from time.Time) time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, line := range n.lines {
		if at := logTime(line); line["msg"] == msg && at.After(from) {
			return at
		}
	}
	return time.Time{}
}
