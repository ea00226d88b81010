package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/fleet/etcdtest"
	"github.com/mapthenet/mapthenet/simweb"
	"github.com/mapthenet/mapthenet/snapshot"
)

// A crawl fleet end to end (issue 17): a 3-member etcd (Debian's etcd
// processes on loopback), 3 crawl nodes (the built binary, separate data
// dirs) over the simulated web, then a fleet rebuild. The web's request
// log keeps every promise fleet-wide, and the snapshot has the rows a
// single-node crawl of the same web gives (times aside). Then a node is
// killed with SIGKILL mid-crawl: its shards resume on the others and the
// next fleet rebuild has every visit.
func TestFleetCrawl(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an etcd cluster and three crawl processes (about 40 s)")
	}
	f := newFleet(t)
	etcd, bin, r, w, base, snaps, seeds := f.etcd, f.bin, f.r, f.r.web, f.base, f.snaps, f.seeds

	t0 := time.Now()
	nodes := f.startNodes(t, 3, now)
	waitVisited(t, nodes, seeds, 90*time.Second)
	t.Logf("3 nodes visited %d sites in %v", len(seeds), time.Since(t0).Round(time.Millisecond))
	fleetRebuild(t, bin, etcd.URL(), snaps, f.admin(), now.Add(time.Hour))
	var fleetCPU time.Duration
	for _, n := range nodes {
		if code := n.stop(t, 20*time.Second); code != 0 {
			t.Fatalf("node exit %d after SIGTERM:\n%s", code, n.log())
		}
		fleetCPU += n.cmd.ProcessState.UserTime() + n.cmd.ProcessState.SystemTime()
	}
	fleetPages := len(w.Requests())
	checkFleetLog(t, w, w.Requests(), 0, movedDuringCrawl(nodes, w.Requests()))
	fleetRows := snapshotRows(t, f.admin())

	// The same web crawled by one node, rebuilt by itself.
	w.Reset()
	single := filepath.Join(base, "single")
	sc := exec.Command(bin, append([]string{"--data-dir", single}, append(fleetCrawlFlags(r, now), "--create", "--until-idle")...)...)
	if out, err := sc.CombinedOutput(); err != nil {
		t.Fatalf("single-node crawl: %v\n%s", err, out)
	}
	singleCPU := sc.ProcessState.UserTime() + sc.ProcessState.SystemTime()
	// A measurement, not a check (a shared machine): the CPU a request
	// costs in fleet mode (3 processes, etcd client, shard moves) and
	// on one machine. Start-up (keys, store, join) is in both.
	t.Logf("CPU per request: fleet %v (%v for %d requests, 3 nodes), single node %v (%v for %d), ratio %.2f",
		fleetCPU/time.Duration(fleetPages), fleetCPU.Round(time.Millisecond), fleetPages,
		singleCPU/time.Duration(len(w.Requests())), singleCPU.Round(time.Millisecond), len(w.Requests()),
		(float64(fleetCPU)/float64(fleetPages))/(float64(singleCPU)/float64(len(w.Requests()))))
	mustRun(t, bin, "--data-dir", single, "rebuild", "--now", now.Add(time.Hour).Format(time.RFC3339), "--min-in-domains", "1000")
	for _, v := range w.CheckAll(w.Requests(), fleetRules) {
		t.Errorf("single-node violation: %s", v)
	}
	singleRows := snapshotRows(t, single)
	for file, want := range singleRows {
		if got := fleetRows[file]; !slices.Equal(got, want) {
			t.Errorf("%s: the fleet's snapshot differs from the single node's:\n%s", file, strings.Join(diff(got, want), "\n"))
		}
	}
	if t.Failed() {
		return
	}

	// 200 days on, most of the schedule is due again: the three nodes
	// crawl it, and one is killed (SIGKILL) as soon as it has recorded a
	// visit.
	admin := &run{dir: f.admin()}
	later := now.Add(200 * 24 * time.Hour)
	var due []string
	for _, row := range readSnapshot[data.ScheduleRow](t, admin, "schedule.parquet") {
		if !row.NextVisit.After(later) {
			due = append(due, row.Domain)
		}
	}
	if len(due) < len(seeds)/2 {
		t.Fatalf("only %d of %d domains due %v on", len(due), len(seeds), later.Sub(now))
	}
	edges1 := rowsOf(readSnapshot[data.EdgeRow](t, admin, "edges.parquet"))
	w.Reset()
	start2 := time.Now()
	nodes = f.startNodes(t, 3, later)
	victim := nodes[2]
	victim.waitFor(t, "a recorded visit on n2", 60*time.Second, func() bool { return len(victim.logged("visit recorded")) > 0 })
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-victim.exited
	killed := time.Now()
	t.Logf("killed n2 %v after the start, after %d recorded visits", killed.Sub(start2).Round(time.Millisecond), len(victim.logged("visit recorded")))
	// Sites that asked a node to wait (429, 503, a block) are left alone
	// until then by every node (the hold-offs in etcd): their visit of
	// this round is the one that was told to wait.
	held := holdOffs(t, etcd)
	t.Logf("hold-offs in etcd: %v", slices.Sorted(maps.Keys(held)))
	due = slices.DeleteFunc(due, func(d string) bool { return held[d] })
	waitVisited(t, nodes[:2], due, 90*time.Second)
	t.Logf("n0 and n1 visited every due domain %v after the kill", time.Since(killed).Round(time.Millisecond))
	// They read it from the partitions of the shards they held (or
	// hold), never the whole schedule.
	for i := range 2 {
		cur := snapshot.Local(f.nodeDir(i)).CurrentPath("")
		parts, _ := filepath.Glob(filepath.Join(cur, data.SchedulePartitionsDir, "shard=*.parquet"))
		if _, err := os.Stat(filepath.Join(cur, data.ScheduleFile)); err == nil || len(parts) == 0 {
			t.Errorf("node %d's pulled snapshot holds %d of %d schedule partitions (want some) and schedule.parquet: %v", i, len(parts), fleetShards, err == nil)
		}
	}
	// fleet status has every owned shard's due counts, by its owner now.
	statusOut, err := exec.Command(bin, "fleet", "status", "--fleet", etcd.URL(), "--json").Output()
	var status fleet.Status
	if err == nil {
		err = json.Unmarshal(statusOut, &status)
	}
	if err != nil {
		t.Fatalf("fleet status --json: %v\n%s", err, statusOut)
	}
	for _, sh := range status.Shards {
		if c := sh.Counts; sh.Owner != "" && (c == nil || c.Token != sh.Token || c.Node != sh.Owner || c.Snapshot == "") {
			t.Errorf("fleet status: shard %d of %s (token %d) has counts %+v", sh.Shard, sh.Owner, sh.Token, c)
		}
	}
	// A node answers on crawl.sock as a single crawl does: status tells
	// what it does; a rebuild of its data directory is refused, naming the
	// fleet's.
	statusOut, err = exec.Command(bin, "--data-dir", f.nodeDir(0), "status", "--json").Output()
	var nodeStatus struct {
		Crawl    *crawl.ActivityReport `json:"crawl"`
		Snapshot *struct {
			Scheduled int `json:"scheduled"`
		} `json:"snapshot"`
	}
	if err == nil {
		err = json.Unmarshal(statusOut, &nodeStatus)
	}
	if err != nil || nodeStatus.Crawl == nil || nodeStatus.Crawl.Visits == 0 || nodeStatus.Snapshot == nil || nodeStatus.Snapshot.Scheduled == 0 {
		t.Errorf("status of node 0: %v\n%s", err, statusOut)
	}
	rb := exec.Command(bin, "--data-dir", f.nodeDir(0), "rebuild")
	if out, err := rb.CombinedOutput(); rb.ProcessState.ExitCode() != 1 || !strings.Contains(string(out), "rebuild --fleet") {
		t.Errorf("rebuild in node 0's data dir: %v, want exit 1 naming rebuild --fleet:\n%s", err, out)
	}
	fleetRebuild(t, bin, etcd.URL(), snaps, admin.dir, later.Add(time.Hour))
	for _, n := range nodes[:2] {
		if code := n.stop(t, 20*time.Second); code != 0 {
			t.Fatalf("node exit %d after SIGTERM:\n%s", code, n.log())
		}
	}
	// A site n2 was visiting when it died is visited again by its next
	// owner (after the takeover wait).
	checkFleetLog(t, w, w.Requests(), 50, true) // a revisit reads its tier's pages; a node was killed
	took := 0
	for _, n := range nodes[:2] {
		for _, line := range n.lines {
			if line["msg"] == "took shard" && logTime(line).After(killed) {
				took++
			}
		}
	}
	if took == 0 {
		t.Error("no shard was taken by n0 or n1 after n2 was killed")
	}
	// No visit lost: every due domain has a visit of this round, and the
	// edges are those of the first round (the web did not change).
	rows := map[string]data.DomainRow{}
	for _, d := range readSnapshot[data.DomainRow](t, admin, "domains.parquet") {
		rows[d.Domain] = d
	}
	for _, d := range due {
		if lv := rows[d].LastVisit; lv == nil || lv.Before(start2.Add(-time.Second)) {
			t.Errorf("%s: last visit %v, not of the second round (started %v)", d, lv, start2)
		}
	}
	if edges2 := rowsOf(readSnapshot[data.EdgeRow](t, admin, "edges.parquet")); !slices.Equal(edges2, edges1) {
		t.Errorf("edges after the kill differ from the first round's:\n%s", strings.Join(diff(edges2, edges1), "\n"))
	}
}

// holdOffs lists the domains with a hold-off in the fleet's etcd.
func holdOffs(t *testing.T, etcd *etcdtest.Cluster) map[string]bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := etcd.Client(t).Get(ctx, fleet.Prefix+"shards/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, kv := range resp.Kvs {
		if _, d, ok := strings.Cut(string(kv.Key), "/holdoff/"); ok {
			out[d] = true
		}
	}
	return out
}

// logTime is a JSON log line's time.
func logTime(line map[string]any) time.Time {
	s, _ := line["time"].(string)
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// fleetWebConfig is a small web without the special sites whose answers
// take seconds (they would only lengthen the takeover waits).
var fleetWebConfig = simweb.Config{Seed: 17, Sites: 30, SpecialShare: 0.25,
	Skip: []simweb.Kind{simweb.KindRobotsHang, simweb.KindSlow, simweb.KindCrawlDelay}}

var fleetRules = simweb.Rules{MinDelay: minDelay, Slack: slack, UserAgent: crawl.DefaultUserAgent,
	Platforms: map[string]time.Duration{"github.io": platformGap}}

// fleetCrawlFlags are the crawl flags every node and the single node use.
// --min-in-domains 1000: a domain found by a visit is not visited in the
// same run (a fleet node leaves it to the next rebuild's schedule), so the
// single node must not either for the snapshots to match.
func fleetCrawlFlags(r *run, at time.Time) []string {
	return []string{"crawl", "--seeds", filepath.Join(r.dir, "seeds.txt"), "--now", at.Format(time.RFC3339),
		"--min-delay", minDelay.String(), "--platform", "github.io=" + platformGap.String(), "--min-in-domains", "1000",
		"--connect-to", r.web.ConnectTo(), "--ca-cert", r.web.CAFile(), "--response-timeout", "3s"}
}

// fleetShards is the fleet's shard count in the tests: two per node.
const fleetShards = 6

// fleetFixture is a fleet ready to crawl: a 3-member etcd of processes
// (skipped, saying why, without an etcd binary unless
// MAPTHENET_REQUIRE_ETCD=1), the built binary, fleetWebConfig's web, a
// snapshot store and an admin data directory, and `fleet init` done.
type fleetFixture struct {
	etcd  *etcdtest.Cluster
	bin   string
	r     *run
	base  string   // the test's directory: admin/, snapshots/, node<i>/
	snaps string   // the snapshot store
	seeds []string // every site of the web
}

func newFleet(t *testing.T) *fleetFixture {
	t.Helper()
	f := &fleetFixture{etcd: etcdtest.Processes(t, 3), bin: buildBinary(t), r: serve(t, fleetWebConfig), base: t.TempDir()}
	f.snaps = filepath.Join(f.base, "snapshots")
	if err := os.Mkdir(f.snaps, 0o755); err != nil {
		t.Fatal(err)
	}
	mustRun(t, f.bin, "--data-dir", f.admin(), "fleet", "init", "--fleet", f.etcd.URL(), "--shards", fmt.Sprint(fleetShards))
	for _, s := range f.r.web.Sites() {
		f.seeds = append(f.seeds, s.Domain)
	}
	return f
}

// admin is the data directory fleet rebuilds stage in.
func (f *fleetFixture) admin() string { return filepath.Join(f.base, "admin") }

// nodeDir is node i's data directory.
func (f *fleetFixture) nodeDir(i int) string { return filepath.Join(f.base, fmt.Sprintf("node%d", i)) }

// startNodes starts nodes n0..n(k-1) as startNode does, each with extra.
func (f *fleetFixture) startNodes(t *testing.T, k int, at time.Time, extra ...string) []*opsProc {
	nodes := make([]*opsProc, 0, k)
	for i := range k {
		nodes = append(nodes, f.startNode(t, i, at, extra...))
	}
	return nodes
}

// startNode starts crawl node i (named n<i>) at the given --now, with
// extra crawl flags.
func (f *fleetFixture) startNode(t *testing.T, i int, at time.Time, extra ...string) *opsProc {
	t.Helper()
	args := append(fleetCrawlFlags(f.r, at), "--fleet", f.etcd.URL(), "--node", fmt.Sprintf("n%d", i), "--snapshots", f.snaps,
		"--lease-ttl", fleetTTL.String(), "--recheck", "1s")
	return startOps(t, f.bin, f.nodeDir(i), append(args, extra...)...)
}

// fleetTTL is the nodes' lease TTL in the tests.
const fleetTTL = 2 * time.Second

func mustRun(t testing.TB, bin string, args ...string) string {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("mapthenet %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func fleetRebuild(t *testing.T, bin, url, snaps, dir string, at time.Time) string {
	t.Helper()
	out := mustRun(t, bin, "--data-dir", dir, "rebuild", "--fleet", url, "--snapshots", snaps, "--now", at.Format(time.RFC3339),
		"--export-timeout", "30s", "--min-in-domains", "1000")
	t.Logf("fleet rebuild: %s", strings.SplitN(out, "\n", 3)[:2])
	return out
}

// waitVisited waits until the nodes' logs together say every domain's
// visit was recorded.
func waitVisited(t *testing.T, nodes []*opsProc, domains []string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		seen := map[string]bool{}
		for _, n := range nodes {
			for _, d := range n.logged("visit recorded") {
				seen[d] = true
			}
		}
		var missing []string
		for _, d := range domains {
			if !seen[d] {
				missing = append(missing, d)
			}
		}
		if len(missing) == 0 {
			return
		}
		exited := false
		for _, n := range nodes {
			select {
			case err := <-n.exited:
				n.exited <- err
				exited = true
			default:
			}
		}
		if exited || time.Now().After(deadline) {
			var logs []string
			for i, n := range nodes {
				logs = append(logs, fmt.Sprintf("--- node %d\n%s", i, n.log()))
			}
			t.Fatalf("a node exited, or %v passed, with no recorded visit of %v:\n%s", timeout, missing, strings.Join(logs, "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkFleetLog runs the web's checks over the whole fleet's requests,
// with at most maxPages pages per site (0: a first visit's). A visit cut
// off by a shard move (a node joining late, leaving, or killed) is made
// again, whole, by the shard's next owner, and a visit finished but not
// committed when its shard moved is made again when the node holds the
// shard again: repeated pages and page caps are then counted and logged,
// not failed (moved: a shard moved after the first request). Every other
// promise (robots.txt first and obeyed, one request at a time per site,
// the pace, nothing after a 429 or 503, no media, signed, the
// User-Agent) is checked fleet-wide, always.
func checkFleetLog(t *testing.T, w *simweb.Web, reqs []simweb.Request, maxPages int, moved bool) {
	t.Helper()
	rules := fleetRules
	rules.MaxPages = maxPages
	again := 0
	for _, v := range w.CheckAll(reqs, rules) {
		switch {
		case v.Check == "no-repeat" && moved:
			again++
		case v.Check == "max-pages" && moved:
		default:
			t.Errorf("fleet-wide violation: %s", v)
		}
	}
	t.Logf("%d requests, %d of them repeated after shard moves", len(reqs), again)
}

// movedDuringCrawl reports whether a node gave a shard up or took one
// between the first and the last request in reqs.
func movedDuringCrawl(nodes []*opsProc, reqs []simweb.Request) bool {
	if len(reqs) == 0 {
		return false
	}
	first, last := reqs[0].Start, reqs[0].End
	for _, r := range reqs {
		if r.End.After(last) {
			last = r.End
		}
	}
	for _, n := range nodes {
		n.mu.Lock()
		for _, line := range n.lines {
			at := logTime(line)
			if (line["msg"] == "took shard" || line["msg"] == "released shard") && at.After(first) && at.Before(last) {
				n.mu.Unlock()
				return true
			}
		}
		n.mu.Unlock()
	}
	return false
}

// snapshotRows reads the current snapshot of dir's domains, edges,
// link words and schedule as text rows, times left out (two crawls visit
// at other moments).
func snapshotRows(t *testing.T, dir string) map[string][]string {
	t.Helper()
	r := &run{dir: dir}
	out := map[string][]string{}
	out["domains.parquet"] = rowsOf(readSnapshot[data.DomainRow](t, r, "domains.parquet"))
	out["edges.parquet"] = rowsOf(readSnapshot[data.EdgeRow](t, r, "edges.parquet"))
	out["link_words.parquet"] = rowsOf(readSnapshot[data.LinkWordRow](t, r, "link_words.parquet"))
	// The schedule's order ties on next_visit, which is a time: as a set.
	out["schedule.parquet"] = rowsOf(readSnapshot[data.ScheduleRow](t, r, "schedule.parquet"))
	slices.Sort(out["schedule.parquet"])
	return out
}

// rowsOf prints rows with every time field zeroed.
func rowsOf[T any](rows []T) []string {
	var out []string
	timeT := reflect.TypeOf(time.Time{})
	for i := range rows {
		v := reflect.ValueOf(&rows[i]).Elem()
		for f := 0; f < v.NumField(); f++ {
			fv := v.Field(f)
			switch {
			case fv.Type() == timeT:
				fv.Set(reflect.Zero(timeT))
			case fv.Kind() == reflect.Pointer && fv.Type().Elem() == timeT:
				fv.Set(reflect.Zero(fv.Type()))
			}
		}
		out = append(out, fmt.Sprintf("%+v", derefAll(v)))
	}
	return out
}

// derefAll shows pointer fields by value.
func derefAll(v reflect.Value) string {
	var b strings.Builder
	for f := 0; f < v.NumField(); f++ {
		fv := v.Field(f)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				fmt.Fprintf(&b, "%s=nil ", v.Type().Field(f).Name)
			} else {
				fmt.Fprintf(&b, "%s=%v ", v.Type().Field(f).Name, fv.Elem().Interface())
			}
			continue
		}
		fmt.Fprintf(&b, "%s=%v ", v.Type().Field(f).Name, fv.Interface())
	}
	return b.String()
}
