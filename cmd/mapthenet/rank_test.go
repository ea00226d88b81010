package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/snapshot"
)

var updateRank = flag.Bool("update-rank", false, "rewrite the rank/schedule golden files")

const rankGoldenDir = "testdata/rank"

func rankGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(rankGoldenDir, name)
	if *updateRank {
		if err := os.MkdirAll(rankGoldenDir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run %s -update-rank writes it)", err, t.Name())
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -run %s -update-rank rewrites it)\ngot:\n%s\nwant:\n%s", name, t.Name(), got, want)
	}
}

var testNow = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

const testTiersFlag = "1:10:50,3:21:20,*:365:8"

// fillStore records a small web in <dir>/store:
//
//	a → b, c, e (nofollow)   b → a, c   d → b, c, g   h → a, c; then h opts out
//	c times out; f is a seed never visited.
func fillStore(t *testing.T, dir string) {
	t.Helper()
	s, err := graph.Open(filepath.Join(dir, "store"), graph.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := func(d time.Duration) time.Time { return testNow.Add(d) }
	if err := s.AddDomains([]string{"a.example", "d.example", "f.example", "h.example"}, at(-40*24*time.Hour), true); err != nil {
		t.Fatal(err)
	}
	link := func(dst string, words ...string) data.Link { return data.Link{Dst: dst, Words: words} }
	ok := func(name string, ago time.Duration, links ...data.Link) *data.VisitResult {
		return &data.VisitResult{Domain: name, StartedAt: at(-ago), FinishedAt: at(-ago + time.Minute), RobotsReadAt: at(-ago),
			RobotsStatus: 200, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 5, Bytes: 40960, Complete: true, Links: links}
	}
	const day = 24 * time.Hour
	visits := []*data.VisitResult{
		ok("h.example", 30*day, link("a.example", "home"), link("c.example", "river")),
		ok("a.example", 15*day, link("b.example", "blue", "sky"), link("c.example", "blue")),
		ok("a.example", 5*day, link("b.example", "blue", "sky"), link("c.example", "blue"), data.Link{Dst: "e.example", Nofollow: true, Words: []string{"spam"}}),
		ok("d.example", 3*day, link("b.example", "river"), link("c.example", "blue", "river"), link("g.example", "new")),
		ok("b.example", 2*day, link("a.example", "home"), link("c.example", "blue", "river")),
		{Domain: "c.example", StartedAt: at(-day), FinishedAt: at(-day + 10*time.Second), Outcome: data.OutcomeTimeout, Error: "robots.txt: timeout"},
		{Domain: "h.example", StartedAt: at(-4 * day), FinishedAt: at(-4*day + time.Second), RobotsReadAt: at(-4 * day), RobotsStatus: 200,
			Outcome: data.OutcomeOptedOut, OptedOut: true},
	}
	for _, v := range visits {
		if err := s.RecordVisit(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// rebuiltDir is a data directory with a store and two snapshots (an hour
// apart, so prev_rank is filled).
func rebuiltDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	fillStore(t, dir)
	for _, now := range []string{"2026-12-01T02:00:00Z", "2026-12-01T03:00:00Z"} {
		if code, out, errOut := runIn(t, dir, "rebuild", "--now", now, "--tiers", testTiersFlag); code != 0 {
			t.Fatalf("rebuild: exit %d\n%s%s", code, out, errOut)
		}
	}
	return dir
}

func TestRankCommand(t *testing.T) {
	t.Parallel()
	dir := rebuiltDir(t)
	tests := []struct {
		golden string
		args   []string
	}{
		{"domains.txt", []string{"rank", "c.example", "https://www.a.example/page", "e.example", "h.example", "f.example"}},
		{"domains.json", []string{"rank", "--json", "c.example", "g.example"}},
		{"top.txt", []string{"rank", "--top", "3"}},
		{"top.json", []string{"rank", "--top", "2", "--json"}},
		{"schedule.txt", []string{"schedule", "--now", "2026-12-01T03:00:00Z", "--limit", "5"}},
		{"schedule.json", []string{"schedule", "--now", "2026-12-02T04:00:00Z", "--json"}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			code, out, errOut := runIn(t, dir, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			rankGolden(t, tc.golden, out)
		})
	}
}

// TestRankErrors: each a clear message on stderr and a non-zero exit, never
// a panic.
func TestRankErrors(t *testing.T) {
	t.Parallel()
	good := rebuiltDir(t)

	corrupt := rebuiltDir(t)
	domains := snapshot.Local(corrupt).CurrentPath(data.DomainsFile)
	if err := os.WriteFile(domains, []byte("PAR1 this is not parquet"), 0o644); err != nil {
		t.Fatal(err)
	}

	badEdges := filepath.Join(t.TempDir(), "edges.parquet")
	if err := writeTestParquet(badEdges, []struct {
		From string `parquet:"from"`
		To   string `parquet:"to"`
	}{{"a.example", "b.example"}}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		dir  string
		args []string
		code int
		want []string
	}{
		{"unknown domain", good, []string{"rank", "nowhere.example"}, exitFailure, []string{`"nowhere.example"`, "not in the snapshot"}},
		{"not a domain", good, []string{"rank", "localhost"}, exitUsage, []string{`"localhost" is not a domain`}},
		{"no snapshot", t.TempDir(), []string{"rank", "a.example"}, exitFailure, []string{"no snapshot yet: run mapthenet rebuild"}},
		{"no snapshot, top", t.TempDir(), []string{"rank", "--top", "5"}, exitFailure, []string{"no snapshot yet: run mapthenet rebuild"}},
		{"no snapshot, schedule", t.TempDir(), []string{"schedule"}, exitFailure, []string{"no snapshot yet: run mapthenet rebuild"}},
		{"corrupt file", corrupt, []string{"rank", "a.example"}, exitFailure, []string{data.DomainsFile + ": not a valid Parquet file"}},
		{"corrupt file, top", corrupt, []string{"rank", "--top", "1"}, exitFailure, []string{data.DomainsFile + ": not a valid Parquet file"}},
		{"bad --now", good, []string{"rebuild", "--now", "yesterday"}, exitUsage, []string{`--now "yesterday"`, "RFC 3339"}},
		{"bad --now, schedule", good, []string{"schedule", "--now", "2026-13-01"}, exitUsage, []string{"RFC 3339"}},
		{"edges without src/dst", good, []string{"rank", "--edges", badEdges, "--out", filepath.Join(t.TempDir(), "o.parquet")}, exitFailure, []string{badEdges}},
		{"edges without --out", good, []string{"rank", "--edges", badEdges}, exitUsage, []string{"--edges and --out go together"}},
		{"nothing to rank", good, []string{"rank"}, exitUsage, []string{"name at least one DOMAIN"}},
		{"top and domain", good, []string{"rank", "--top", "3", "a.example"}, exitUsage, []string{"not both"}},
		{"negative limit", good, []string{"schedule", "--limit", "-1"}, exitUsage, []string{"--limit -1"}},
		{"bad tiers", good, []string{"rebuild", "--tiers", "10:5"}, exitUsage, []string{"MAXRANK:DAYS:PAGES"}},
		{"tiers without catch-all", good, []string{"rebuild", "--tiers", "10:5:5,20:5:5"}, exitUsage, []string{"max_rank 0"}},
		{"keep 0", good, []string{"rebuild", "--keep", "0"}, exitUsage, []string{"--keep 0"}},
		{"same id twice", good, []string{"rebuild", "--now", "2026-12-01T03:00:00Z"}, exitFailure, []string{"exists already", "2026-12-01T030000Z"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := runIn(t, tc.dir, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", code, tc.code, errOut)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
			if strings.Contains(errOut, "panic") || strings.Contains(errOut, "goroutine") {
				t.Errorf("stderr shows a panic: %s", errOut)
			}
		})
	}
}
