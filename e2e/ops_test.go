package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/simweb"
	"github.com/mapthenet/mapthenet/snapshot"
)

// TestOps runs the built binary as an operator would: crawl, rebuild from
// "cron" while it runs, a second crawl, a stop by SIGTERM (issue 5 items
// 1, 2 and 5). One build for all of them.
func TestOps(t *testing.T) {
	bin := buildBinary(t)
	t.Run("graceful stop", func(t *testing.T) { testGracefulStop(t, bin) })
	t.Run("rebuild while crawling", func(t *testing.T) { testRebuildWhileCrawling(t, bin) })
	t.Run("after kill -9", func(t *testing.T) { testAfterKill(t, bin) })
	t.Run("status while crawling", func(t *testing.T) { testStatusWhileCrawling(t, bin) })
}

// mapthenet status, asked while a crawl runs (here idle after visiting
// every site), reports what the simulated web's request log shows: one
// visit per site requested, the pages the visit lines count; and the
// crawl's log starts with its settings.
func testStatusWhileCrawling(t *testing.T, bin string) {
	w, dir := opsWeb(t, 8, 20*time.Millisecond)
	p := startOps(t, bin, dir, opsCrawlArgs(w, dir)...)
	// Idle, and every visit committed (the recorder logs "visit recorded"
	// after the commit, which may come after the loop has gone idle).
	p.waitFor(t, "an idle crawl with 8 visits recorded", 60*time.Second, func() bool {
		return len(p.logged("crawl idle")) > 0 && len(p.logged("visit recorded")) >= 8
	})
	out, err := exec.Command(bin, "--data-dir", dir, "status", "--json").Output()
	if err != nil {
		t.Fatalf("status: %v\n%s", err, out)
	}
	var st struct {
		Crawl *struct {
			Visits           int            `json:"visits"`
			Pages            int            `json:"pages"`
			VisitsLastHour   int            `json:"visits_last_hour"`
			OutcomesLastHour map[string]int `json:"outcomes_last_hour"`
			SitesInFlight    int            `json:"sites_in_flight"`
		} `json:"crawl"`
		Store struct {
			Bytes int64 `json:"bytes"`
		} `json:"store"`
	}
	if err := json.Unmarshal(out, &st); err != nil || st.Crawl == nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	sites := map[string]bool{}
	for _, r := range w.Requests() {
		sites[r.Site] = true
	}
	pages := 0
	p.mu.Lock()
	var start map[string]any
	for _, m := range p.lines {
		if m["msg"] == "visit recorded" {
			pages += int(m["pages"].(float64))
		}
		if m["msg"] == "crawl starting" && start == nil {
			start = m
		}
	}
	p.mu.Unlock()
	c := st.Crawl
	outcomes := 0
	for _, n := range c.OutcomesLastHour {
		outcomes += n
	}
	if c.Visits != len(sites) || c.VisitsLastHour != len(sites) || outcomes != len(sites) || c.Pages != pages || c.SitesInFlight != 0 || st.Store.Bytes == 0 {
		t.Errorf("status %s\nrequest log: %d sites; visit lines: %d pages", out, len(sites), pages)
	}
	if start == nil || start["data_dir"] != dir || start["network_operators"] == nil || start["user_agent"] == nil {
		t.Errorf("start-up line %v", start)
	}
	if code := p.stop(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, p.log())
	}
}

// A crawl killed with -9 leaves its owner file and socket behind: neither
// blocks the next rebuild or crawl (Badger's lock and the rebuild lock die
// with the process).
func testAfterKill(t *testing.T, bin string) {
	w, dir := opsWeb(t, 8, 200*time.Millisecond)
	p := startOps(t, bin, dir, opsCrawlArgs(w, dir, "--max-sites-in-flight", "2")...)
	p.waitFor(t, "a recorded visit", 30*time.Second, func() bool { return len(p.logged("visit recorded")) >= 1 })
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t, 10*time.Second); code != -1 {
		t.Logf("killed crawl exit code %d", code)
	}
	if _, err := os.Stat(filepath.Join(dir, control.StoreOwnerName)); err != nil {
		t.Logf("no stale owner file to test with: %v", err)
	}
	out, err := exec.Command(bin, "--data-dir", dir, "rebuild", "--now", "2026-12-02T06:00:00Z").CombinedOutput()
	if err != nil {
		t.Fatalf("rebuild after kill -9: %v\n%s", err, out)
	}
	args := append([]string{"--data-dir", dir}, opsCrawlArgs(w, dir, "--until-idle", "--max-sites", "1")...)
	if out, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("crawl after kill -9: %v\n%s", err, out)
	}
}

// opsWeb is a web of slow sites (every answer waits), so that a crawl is
// always mid-visit.
func opsWeb(t *testing.T, sites int, slow time.Duration) (*simweb.Web, string) {
	t.Helper()
	r := serve(t, simweb.Config{Seed: 3, Sites: sites, NoNamed: true, SpecialShare: 0.5,
		SpecialKinds: []simweb.Kind{simweb.KindSlow}, SlowDelay: slow})
	return r.web, r.dir
}

// opsProc is a running mapthenet command whose JSON log is read as it comes.
type opsProc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	lines  []map[string]any
	raw    []string
	news   chan struct{} // a line arrived (or the log ended)
	exited chan error
}

func startOps(t testing.TB, bin, dir string, args ...string) *opsProc {
	t.Helper()
	return startOpsIn(t, nil, bin, dir, args...)
}

// startOpsIn is startOps with the command run through wrap (say, ip
// netns exec NAME, which execs it: signals reach the binary itself).
func startOpsIn(t testing.TB, wrap []string, bin, dir string, args ...string) *opsProc {
	t.Helper()
	p := &opsProc{news: make(chan struct{}, 1), exited: make(chan error, 1)}
	argv := append(append(slices.Clone(wrap), bin, "--data-dir", dir, "--log-format", "json"), args...)
	p.cmd = exec.Command(argv[0], argv[1:]...)
	p.cmd.Stdout = &p.stdout
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			json.Unmarshal(sc.Bytes(), &m) // a non-JSON line (the final error) is kept raw only
			p.mu.Lock()
			p.lines = append(p.lines, m)
			p.raw = append(p.raw, sc.Text())
			p.mu.Unlock()
			p.notify()
		}
		io.Copy(io.Discard, stderr)
		p.exited <- p.cmd.Wait()
		p.notify()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			<-p.exited
		}
	})
	return p
}

func (p *opsProc) notify() {
	select {
	case p.news <- struct{}{}:
	default:
	}
}

// logged returns the "domain" of every log line with message msg, in order.
func (p *opsProc) logged(msg string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, m := range p.lines {
		if m["msg"] == msg {
			d, _ := m["domain"].(string)
			out = append(out, d)
		}
	}
	return out
}

func (p *opsProc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.raw, "\n")
}

// waitFor waits until cond holds, re-checking at each log line; it fails
// the test after timeout or when the process exits first.
func (p *opsProc) waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.After(timeout)
	for !cond() {
		select {
		case <-p.news:
		case err := <-p.exited:
			p.exited <- err
			if !cond() {
				t.Fatalf("exited (%v) before %s:\n%s", err, what, p.log())
			}
			return
		case <-deadline:
			t.Fatalf("no %s after %v:\n%s", what, timeout, p.log())
		}
	}
}

// stop sends SIGTERM and returns the exit code; the process must exit
// within limit (the promise: 10 s).
func (p *opsProc) stop(t *testing.T, limit time.Duration) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	code := p.wait(t, limit)
	t.Logf("exited %v after SIGTERM", time.Since(t0).Round(time.Millisecond))
	return code
}

func (p *opsProc) wait(t *testing.T, limit time.Duration) int {
	t.Helper()
	select {
	case err := <-p.exited:
		p.exited <- err
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(limit):
		t.Fatalf("still running %v after SIGTERM:\n%s", limit, p.log())
		return -1
	}
}

func opsCrawlArgs(w *simweb.Web, dir string, extra ...string) []string {
	return append([]string{"crawl", "--create", "--seeds", filepath.Join(dir, "seeds.txt"), "--min-delay", "10ms",
		"--connect-to", w.ConnectTo(), "--ca-cert", w.CAFile()}, extra...)
}

// visitedInStore lists the domains the store has a visit of.
func opsVisited(t *testing.T, dir string) []string {
	t.Helper()
	s, err := graph.Open(filepath.Join(dir, "store"), graph.Options{Create: true, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	var out []string
	sn.Domains(func(d *data.DomainState) error {
		if d.Visited() {
			out = append(out, d.Name)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// SIGTERM mid-crawl: exit 0 within 10 s, and the store holds exactly the
// visits the log says were recorded (none half-written, none lost).
func testGracefulStop(t *testing.T, bin string) {
	w, dir := opsWeb(t, 16, 300*time.Millisecond)
	p := startOps(t, bin, dir, opsCrawlArgs(w, dir, "--max-sites-in-flight", "4")...)
	p.waitFor(t, "3 recorded visits", 30*time.Second, func() bool { return len(p.logged("visit recorded")) >= 3 })
	if code := p.stop(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, p.log())
	}
	recorded := p.logged("visit recorded")
	slices.Sort(recorded)
	if got := opsVisited(t, dir); !slices.Equal(got, recorded) {
		t.Errorf("store has visits of %v\nlog says recorded %v", got, recorded)
	}
	p.mu.Lock()
	for _, m := range p.lines {
		if m["msg"] == "crawl done" {
			t.Logf("stopped with %v visits recorded, %v abandoned in flight", m["visits"], m["abandoned"])
		}
	}
	p.mu.Unlock()
	for _, f := range []string{control.SocketName, control.StoreOwnerName} {
		if _, err := os.Stat(filepath.Join(dir, f)); !os.IsNotExist(err) {
			t.Errorf("%s left behind (%v)", f, err)
		}
	}
}

// rebuild from "cron" while a crawl runs: it runs inside the crawl, the
// snapshot is consistent, the crawl goes on and follows the new schedule;
// a second crawl is refused, naming the first.
func testRebuildWhileCrawling(t *testing.T, bin string) {
	w, dir := opsWeb(t, 16, 150*time.Millisecond)
	// Replay two days ahead with a one-day tier: every domain the crawl
	// visits now is due again in the schedule the rebuild writes.
	crawlNow := time.Now().UTC().Add(48 * time.Hour).Truncate(time.Second)
	p := startOps(t, bin, dir, opsCrawlArgs(w, dir, "--max-sites-in-flight", "3", "--recheck", "200ms",
		"--metrics-addr", "127.0.0.1:0", "--now", crawlNow.Format(time.RFC3339))...)
	p.waitFor(t, "3 recorded visits", 30*time.Second, func() bool { return len(p.logged("visit recorded")) >= 3 })

	// One writer: a second crawl is refused and names the first.
	second := exec.Command(bin, append([]string{"--data-dir", dir}, opsCrawlArgs(w, dir, "--until-idle")...)...)
	out, err := second.CombinedOutput()
	var ee *exec.ExitError
	want := "is in use by mapthenet crawl (pid " + strconv.Itoa(p.cmd.Process.Pid) + ", started "
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(out), want) {
		t.Errorf("second crawl: %v\n%s\nwant %q", err, out, want)
	}

	before := len(p.logged("visit recorded"))
	rb := exec.Command(bin, "--data-dir", dir, "rebuild", "--now", crawlNow.Add(time.Hour).Format(time.RFC3339),
		"--tiers", "*:1:8", "--workers", "1")
	out, err = rb.CombinedOutput()
	if err != nil {
		t.Fatalf("rebuild while crawling: %v\n%s\ncrawl log:\n%s", err, out, p.log())
	}
	id := crawlNow.Add(time.Hour).Format(data.SnapshotIDLayout)
	if !strings.Contains(string(out), "snapshot "+id) {
		t.Errorf("rebuild output:\n%s", out)
	}
	opsCheckConsistent(t, w, dir, id)

	// The crawl goes on, reads the new schedule and visits again a domain
	// the snapshot saw visited.
	p.waitFor(t, "a revisit after the new schedule", 30*time.Second, func() bool {
		rec := p.logged("visit recorded")
		seen := map[string]bool{}
		for _, d := range rec[:before] {
			seen[d] = true
		}
		for _, d := range rec[before:] {
			if seen[d] {
				return true
			}
		}
		return false
	})
	if !strings.Contains(p.log(), `"msg":"new schedule","snapshot":"`+id+`"`) {
		t.Errorf("the crawl never said it read the new schedule")
	}
	// Its metrics agree that it went on.
	if url := opsMetricsURL(p); url == "" {
		t.Error("no metrics address logged")
	} else {
		body := opsGet(t, url)
		if v := opsMetric(body, `mapthenet_crawl_visits_total{outcome="ok"}`); v <= float64(before) {
			t.Errorf("metrics: %v ok visits, want more than the %d before the rebuild", v, before)
		}
		if v := opsMetric(body, "mapthenet_crawl_schedule_loads_total"); v < 2 {
			t.Errorf("metrics: %v schedule loads, want 2 or more", v)
		}
	}
	if code := p.stop(t, 10*time.Second); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, p.log())
	}
}

// checkConsistent: every visit in the snapshot is wholly in it. Each site
// was visited once when the rebuild ran, so a site with an ok visit in
// visits.parquet has exactly its expected out-edges, and a site with none
// has no out-edges at all.
func opsCheckConsistent(t *testing.T, w *simweb.Web, dir, id string) {
	t.Helper()
	r := &run{web: w, dir: dir}
	cur, err := snapshot.Local(dir).Current()
	if err != nil || cur != id {
		t.Fatalf("current → %q (%v), want %s", cur, err, id)
	}
	visits := readSnapshot[data.VisitRow](t, r, data.VisitsFile)
	edges := readSnapshot[data.EdgeRow](t, r, data.EdgesFile)
	visitsOf := map[string]int{}
	ok := map[string]bool{}
	for _, v := range visits {
		visitsOf[v.Domain]++
		if v.Outcome == string(data.OutcomeOK) {
			ok[v.Domain] = true
		}
	}
	got := map[string][]string{}
	for _, e := range edges {
		got[e.Src] = append(got[e.Src], e.Dst)
	}
	want := map[string][]string{}
	for _, e := range w.ExpectedEdges() {
		want[e.Src] = append(want[e.Src], e.Dst)
	}
	if len(visits) == 0 || len(visits) == len(w.Sites()) {
		t.Logf("the snapshot holds %d of %d visits: not a mid-crawl snapshot", len(visits), len(w.Sites()))
	}
	for _, s := range w.Sites() {
		d := s.Domain
		g, e := slices.Sorted(slices.Values(got[d])), slices.Sorted(slices.Values(want[d]))
		switch {
		case visitsOf[d] > 1:
			t.Errorf("%s: %d visits in the snapshot, want at most 1", d, visitsOf[d])
		case ok[d] && !slices.Equal(g, e):
			t.Errorf("%s: edges %v, want %v (a visit half in the snapshot?)", d, g, e)
		case visitsOf[d] == 0 && len(g) > 0:
			t.Errorf("%s: edges %v without a visit in the snapshot", d, g)
		}
	}
}

// metricsURL is the /metrics address the crawl logged.
func opsMetricsURL(p *opsProc) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.lines {
		if m["msg"] == "serving metrics" {
			u, _ := m["url"].(string)
			return u
		}
	}
	return ""
}

// opsMetric is the value of one series in a /metrics page (-1: absent).
func opsMetric(body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}

func opsGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
