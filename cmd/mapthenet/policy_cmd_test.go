package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The revisit policy is configured once, in <data-dir>/config.toml, for
// both crawl and rebuild: one tier table and one discovery threshold.

// pageCounter is a web whose every site's home page links to ten pages of
// its own and to b.example; it counts the pages each host is asked for
// (robots.txt aside).
type pageCounter struct {
	mu    sync.Mutex
	pages map[string]int
}

func (p *pageCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		w.Write([]byte("User-agent: *\nAllow: /\n"))
		return
	}
	p.mu.Lock()
	p.pages[r.Host]++
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/html")
	var b strings.Builder
	for i := range 10 {
		fmt.Fprintf(&b, `<a href="/p%d">page %d</a> `, i, i)
	}
	b.WriteString(`<a href="https://b.example/">b</a>`)
	w.Write([]byte(b.String()))
}

func writeDataDirConfigFile(t *testing.T, dir, config string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTiersConfiguredOnce: the config's tier table gives a crawl's first
// visits (a seed, a domain found during the run) the lowest tier's pages
// of that table, not DESIGN.md's 8, and the rebuild's tiers and schedule
// come from the same table.
func TestTiersConfiguredOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	writeDataDirConfigFile(t, dir, "tiers = [\"1:7:30\", \"*:100:3\"]\n")
	web := &pageCounter{pages: map[string]int{}}
	srv := httptest.NewServer(web)
	defer srv.Close()
	code, stderr := crawlOnLoopback(t, dir, srv, "--max-sites", "2")
	if code != 0 {
		t.Fatalf("crawl: exit %d: %s", code, stderr)
	}
	for _, host := range []string{"a.example", "b.example"} { // the seed, then the domain it links to
		if got := web.pages[host]; got != 3 {
			t.Errorf("%s: %d pages read, want the config's lowest tier's 3 (all pages: %v)", host, got, web.pages)
		}
	}
	if code, _, stderr := runIn(t, dir, "rebuild", "--now", "2026-12-03T02:00:00Z", "--workers", "1"); code != 0 {
		t.Fatalf("rebuild: exit %d: %s", code, stderr)
	}
	for _, r := range scheduleRows(t, dir, "2026-12-03T02:00:00Z") {
		// Ranked 1, a.example or b.example is in tier 1; the other in tier 2.
		if !(r.Tier == 1 && r.Pages == 30 || r.Tier == 2 && r.Pages == 3) {
			t.Errorf("schedule row %+v: not the config's table", r)
		}
	}
	// A flag still wins over the config.
	code, stderr = crawlOnLoopback(t, filepath.Join(t.TempDir(), "flag"), srv, "--tiers", "*:1:1")
	if code != 0 {
		t.Fatalf("crawl --tiers: exit %d: %s", code, stderr)
	}
}

// TestMinInDomainsConfiguredOnce: the config's discovery threshold holds
// back, in the rebuild's schedule as in a crawl's run, a never-visited
// domain with fewer followed linking domains; seeds are scheduled anyway.
func TestMinInDomainsConfiguredOnce(t *testing.T) {
	t.Parallel()
	const now = "2026-12-01T03:00:00Z"
	scheduled := func(dir string) map[string]string {
		t.Helper()
		if code, _, stderr := runIn(t, dir, "rebuild", "--now", now, "--workers", "1"); code != 0 {
			t.Fatalf("rebuild: exit %d: %s", code, stderr)
		}
		got := map[string]string{}
		for _, r := range scheduleRows(t, dir, now) {
			got[r.Domain] = r.Reason
		}
		return got
	}
	// fillStore: g.example has one followed linking domain (d.example),
	// f.example is a seed nobody links to; neither was visited.
	dir := t.TempDir()
	fillStore(t, dir)
	if got := scheduled(dir); got["g.example"] != "new" || got["f.example"] != "new" {
		t.Fatalf("default threshold: schedule %v, want g.example and f.example new", got)
	}
	dir = t.TempDir()
	fillStore(t, dir)
	writeDataDirConfigFile(t, dir, "min-in-domains = 2\n")
	got := scheduled(dir)
	if _, ok := got["g.example"]; ok {
		t.Errorf("min-in-domains 2: g.example, linked from one domain, is scheduled: %v", got)
	}
	if got["f.example"] != "new" || got["a.example"] != "revisit" {
		t.Errorf("min-in-domains 2: schedule %v, want the seed f.example new and a.example a revisit", got)
	}

	// The same key holds a crawl's own discoveries back: the seed links
	// to b.example, one linking domain, so b.example waits.
	dir = filepath.Join(t.TempDir(), "crawl")
	writeDataDirConfigFile(t, dir, "min-in-domains = 2\n")
	web := &pageCounter{pages: map[string]int{}}
	srv := httptest.NewServer(web)
	defer srv.Close()
	if code, stderr := crawlOnLoopback(t, dir, srv, "--max-sites", "2"); code != 0 {
		t.Fatalf("crawl: exit %d: %s", code, stderr)
	}
	if web.pages["b.example"] != 0 || web.pages["a.example"] == 0 {
		t.Errorf("min-in-domains 2: pages read %v, want the seed's only", web.pages)
	}
}

// TestPolicyFlagErrors: a bad tier table or threshold is a usage error
// (exit 2) naming the flag, from crawl and rebuild alike, and from the
// data directory's config.
func TestPolicyFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		config string
		args   []string
		want   string
	}{
		{"", []string{"crawl", "--until-idle", "--tiers", "10:5"}, "MAXRANK:DAYS:PAGES"},
		{"", []string{"rebuild", "--tiers", "10:5:5,20:5:5"}, "max_rank 0"},
		{"tiers = \"10:5:5,5:5:5,*:1:1\"\n", []string{"crawl", "--until-idle"}, "is not above"},
		{"tiers = \"*:0:8\"\n", []string{"rebuild"}, "must be positive"},
		{"", []string{"crawl", "--until-idle", "--min-in-domains", "-1"}, "--min-in-domains"},
		{"min-in-domains = -2\n", []string{"rebuild"}, "--min-in-domains"},
	} {
		dir := t.TempDir()
		if tt.config != "" {
			writeDataDirConfigFile(t, dir, tt.config)
		}
		code, _, stderr := runIn(t, dir, tt.args...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("config %q, %v: exit %d, want %d and %q: %s", tt.config, tt.args, code, exitUsage, tt.want, stderr)
		}
		if !strings.Contains(stderr, "--tiers") && !strings.Contains(stderr, "--min-in-domains") {
			t.Errorf("%v: the message names no flag: %s", tt.args, stderr)
		}
		oneLine(t, stderr)
	}
}

// scheduleRows is the current snapshot's schedule as `schedule --json` lists it.
func scheduleRows(t *testing.T, dir, now string) []scheduleItemJSON {
	t.Helper()
	code, out, stderr := runIn(t, dir, "schedule", "--json", "--limit", "0", "--now", now)
	if code != 0 {
		t.Fatalf("schedule: exit %d: %s", code, stderr)
	}
	var s scheduleJSON
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("schedule --json: %v\n%s", err, out)
	}
	return s.Schedule
}
