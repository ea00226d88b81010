package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet/etcdtest"
	"github.com/mapthenet/mapthenet/simweb"
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
	etcd := etcdtest.Processes(t, 3)
	bin := buildBinary(t)
	r := serve(t, fleetWebConfig)
	w := r.web
	base := t.TempDir()
	snaps := filepath.Join(base, "snapshots")
	if err := os.Mkdir(snaps, 0o755); err != nil {
		t.Fatal(err)
	}
	mustRun(t, bin, "--data-dir", filepath.Join(base, "admin"), "fleet", "init", "--fleet", etcd.URL(), "--shards", "6")

	t0 := time.Now()
	var nodes []*opsProc
	for i := range 3 {
		nodes = append(nodes, startFleetNode(t, bin, r, etcd.URL(), snaps, filepath.Join(base, fmt.Sprintf("node%d", i)), fmt.Sprintf("n%d", i)))
	}
	var seeds []string
	for _, s := range w.Sites() {
		seeds = append(seeds, s.Domain)
	}
	waitVisited(t, nodes, seeds, 90*time.Second)
	t.Logf("3 nodes visited %d sites in %v", len(seeds), time.Since(t0).Round(time.Millisecond))
	fleetRebuild(t, bin, etcd.URL(), snaps, filepath.Join(base, "admin"), now.Add(time.Hour))
	for _, n := range nodes {
		if code := n.stop(t, 20*time.Second); code != 0 {
			t.Fatalf("node exit %d after SIGTERM:\n%s", code, n.log())
		}
	}
	checkFleetLog(t, w, w.Requests(), true)
	fleetRows := snapshotRows(t, filepath.Join(base, "admin"))

	// The same web crawled by one node, rebuilt by itself.
	w.Reset()
	single := filepath.Join(base, "single")
	mustRun(t, bin, append([]string{"--data-dir", single}, append(fleetCrawlFlags(r), "--create", "--until-idle")...)...)
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
func fleetCrawlFlags(r *run) []string {
	return []string{"crawl", "--seeds", filepath.Join(r.dir, "seeds.txt"), "--now", now.Format(time.RFC3339),
		"--min-delay", minDelay.String(), "--platform", "github.io=" + platformGap.String(), "--min-in-domains", "1000",
		"--connect-to", r.web.ConnectTo(), "--ca-cert", r.web.CAFile(), "--response-timeout", "3s"}
}

func startFleetNode(t *testing.T, bin string, r *run, url, snaps, dir, name string) *opsProc {
	t.Helper()
	return startOps(t, bin, dir, append(fleetCrawlFlags(r), "--fleet", url, "--node", name, "--snapshots", snaps,
		"--lease-ttl", "2s", "--recheck", "1s")...)
}

func mustRun(t *testing.T, bin string, args ...string) string {
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

// checkFleetLog runs the web's checks over the whole fleet's requests.
// once: every site was visited once (no takeover made a visit again).
func checkFleetLog(t *testing.T, w *simweb.Web, reqs []simweb.Request, once bool) {
	t.Helper()
	vs := w.CheckAll(reqs, fleetRules)
	for _, v := range vs {
		if !once && v.Check == "no-repeat" {
			continue
		}
		t.Errorf("fleet-wide violation: %s", v)
	}
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
