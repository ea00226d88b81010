package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/snapshot"
)

func writeTestParquet[T any](path string, rows []T) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := parquet.NewGenericWriter[T](f)
	if _, err := w.Write(rows); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return f.Close()
}

func TestRebuildCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fillStore(t, dir)
	// 8 edges: h.example's two went when it opted out.
	code, out, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z", "--tiers", testTiersFlag, "--keep", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, w := range []string{"snapshot 2026-12-01T030000Z", "8 domains, 4 ranked", "8 edges", "1 link words", "7 visits", "7 scheduled", "PageRank:"} {
		if !strings.Contains(out, w) {
			t.Errorf("summary lacks %q:\n%s", w, out)
		}
	}
	target, err := snapshot.Local(dir).Current()
	if err != nil || target != "2026-12-01T030000Z" {
		t.Errorf("current → %q (%v)", target, err)
	}
	// --keep 1 leaves only the newest.
	if code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-02T03:00:00Z", "--keep", "1"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if err := snapshot.Local(dir).Stat("2026-12-01T030000Z"); !os.IsNotExist(err) {
		t.Errorf("the older snapshot is still there: %v", err)
	}
}

func TestRebuildCommandEmptyStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// No store: refused (a mistyped --data-dir), unless told to create one.
	code, out, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z")
	if code != exitFailure || !strings.Contains(errOut, "run `mapthenet init` (or pass --create)") {
		t.Fatalf("no store: exit %d\n%s%s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "store")); !os.IsNotExist(err) {
		t.Errorf("the refused rebuild made a store: %v", err)
	}
	code, out, errOut = runIn(t, dir, "rebuild", "--create", "--now", "2026-12-01T03:00:00Z")
	if code != 0 || !strings.Contains(out, "0 domains, 0 ranked") {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runIn(t, dir, "schedule", "--now", "2026-12-01T03:00:00Z")
	if code != 0 || !strings.Contains(out, "0 scheduled") {
		t.Fatalf("schedule: exit %d\n%s%s", code, out, errOut)
	}
}

func TestRebuildCommandStoreBusy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := graph.Open(filepath.Join(dir, "store"), graph.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z")
	if code != exitBusy || !strings.Contains(errOut, "running crawl") {
		t.Errorf("exit %d, stderr %q", code, errOut)
	}
}

func TestRankEdgeFileCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "edges.parquet")
	out := filepath.Join(dir, "ranks.parquet")
	if err := writeTestParquet(in, []data.EdgeRow{{Src: "a.example", Dst: "b.example"}, {Src: "b.example", Dst: "c.example"}}); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut := runIn(t, dir, "rank", "--edges", in, "--out", out)
	if code != 0 || !strings.Contains(stdout, "2 edge rows") || !strings.Contains(stdout, "2 ranked") {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	if _, err := os.Stat(out); err != nil {
		t.Error(err)
	}
}

// TestRankEdgeFileReportsExtrapolations: on a graph with rank sinks
// (graphgen's SinkShare), rank --edges says how many times PageRank
// extrapolated, in its text and in its JSON, and still meets the
// stopping rule.
func TestRankEdgeFileReportsExtrapolations(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	in := filepath.Join(dir, "edges.parquet")
	g, err := graphgen.New(graphgen.Config{Domains: 20_000, Edges: 150_000, Seed: 1, SinkShare: 0.05})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.WriteEdgesParquet(in); err != nil {
		t.Fatal(err)
	}
	code, stdout, errOut := runIn(t, dir, "rank", "--edges", in, "--out", filepath.Join(dir, "a.parquet"))
	if code != 0 || !strings.Contains(stdout, " extrapolations\n") {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	code, stdout, errOut = runIn(t, dir, "rank", "--edges", in, "--out", filepath.Join(dir, "b.parquet"), "--json")
	var doc struct {
		Iterations, Extrapolations int
		Residual                   float64
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &doc) != nil {
		t.Fatalf("exit %d\n%s%s", code, stdout, errOut)
	}
	if doc.Extrapolations == 0 || doc.Residual >= 1e-9 || doc.Iterations >= 100 {
		t.Errorf("%+v: want extrapolations and a residual below 1e-9 within 100 iterations", doc)
	}
}
