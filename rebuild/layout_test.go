package rebuild

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/layout"
)

// generatedSource is a graphgen graph with planted communities as a
// Source, plus extra edges.
func generatedSource(t *testing.T, extra ...[2]uint32) *fakeSource {
	t.Helper()
	gen, err := graphgen.New(graphgen.Config{Domains: 900, Edges: 6000, Seed: 5, Communities: 3})
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{n: uint32(gen.Domains())}
	for id := range uint32(gen.Domains()) {
		src.domains = append(src.domains, data.DomainState{ID: id, Name: gen.Name(id), FirstSeen: asOf.Add(-day)})
	}
	err = gen.Edges(func(s, d uint32, nofollow bool) error {
		src.edges = append(src.edges, data.EdgeRecord{SrcID: s, DstID: d, FirstSeen: asOf.Add(-day), LastSeen: asOf.Add(-day), Nofollow: nofollow})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range extra {
		src.edges = append(src.edges, data.EdgeRecord{SrcID: e[0], DstID: e[1], FirstSeen: asOf, LastSeen: asOf})
	}
	slices.SortFunc(src.edges, func(a, b data.EdgeRecord) int {
		if a.SrcID != b.SrcID {
			return int(a.SrcID) - int(b.SrcID)
		}
		return int(a.DstID) - int(b.DstID)
	})
	return src
}

type mapPos struct {
	x, y   float64
	ranked bool
}

// mapOf reads the current snapshot's positions by domain, checking that
// exactly the ranked domains are placed (when all should be).
func mapOf(t *testing.T, dir string) map[string]mapPos {
	t.Helper()
	rows, err := mustOpen(t, dir, "").Domains()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]mapPos{}
	for _, r := range rows {
		if (r.MapX == nil) != (r.MapY == nil) {
			t.Fatalf("%s: map_x %v, map_y %v", r.Domain, r.MapX, r.MapY)
		}
		if r.MapX != nil && r.Rank == nil {
			t.Errorf("%s is unranked but placed", r.Domain)
		}
		if r.MapX != nil {
			m[r.Domain] = mapPos{*r.MapX, *r.MapY, r.Rank != nil}
		}
	}
	return m
}

func moved(a, b map[string]mapPos) (mean float64, common int) {
	for name, p := range a {
		if q, ok := b[name]; ok {
			mean += math.Hypot(p.x-q.x, p.y-q.y)
			common++
		}
	}
	return mean / float64(max(common, 1)), common
}

// TestRebuildMap: the first rebuild lays the map out; a second over an
// unchanged store keeps every position exactly; a third with one new edge
// moves the domains little on average. The top 400 are laid out, the other
// ranked domains placed beside their neighbours.
func TestRebuildMap(t *testing.T) {
	dir := t.TempDir()
	opts := func(now time.Time) Options {
		return Options{DataDir: dir, Now: now, MapTop: 400, Layout: layout.Params{Iterations: 200, WarmIterations: 30}}
	}
	m1, err := RunFrom(context.Background(), generatedSource(t), opts(asOf))
	if err != nil {
		t.Fatal(err)
	}
	first := mapOf(t, dir)
	if int64(len(first)) != m1.Rank.Ranked {
		t.Errorf("%d domains placed, %d ranked: every ranked domain here has a placed neighbour", len(first), m1.Rank.Ranked)
	}
	var layoutStage *data.StageTiming
	for i, st := range m1.Stages {
		if st.Stage == "layout" {
			layoutStage = &m1.Stages[i]
		}
	}
	if layoutStage == nil || layoutStage.Rows != int64(len(first)) {
		t.Errorf("manifest stages %+v: want a layout stage with %d rows", m1.Stages, len(first))
	}

	if _, err := RunFrom(context.Background(), generatedSource(t), opts(asOf.Add(time.Hour))); err != nil {
		t.Fatal(err)
	}
	second := mapOf(t, dir)
	if d, n := moved(first, second); d != 0 || n != len(first) || len(second) != len(first) {
		t.Errorf("unchanged store: %d of %d domains kept, mean displacement %v; want all kept, 0", n, len(first), d)
	}

	// One new edge between two domains of different communities
	// (community = id mod 3).
	if _, err := RunFrom(context.Background(), generatedSource(t, [2]uint32{3, 10}), opts(asOf.Add(2*time.Hour))); err != nil {
		t.Fatal(err)
	}
	third := mapOf(t, dir)
	d, n := moved(second, third)
	edge := meanEdge(t, dir, third)
	t.Logf("one new edge: %d domains in both, mean displacement %.2f, mean edge length %.2f", n, d, edge)
	if n != len(second) || d == 0 || d > 0.25*edge {
		t.Errorf("one new edge: %d of %d domains still placed, mean displacement %.2f; want all, and (0, %.2f]", n, len(second), d, 0.25*edge)
	}
}

// meanEdge is the mean length of the followed edges between placed domains.
func meanEdge(t *testing.T, dir string, pos map[string]mapPos) float64 {
	edges, err := mustOpen(t, dir, "").Edges()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	var n int
	for _, e := range edges {
		a, ok1 := pos[e.Src]
		b, ok2 := pos[e.Dst]
		if ok1 && ok2 && !e.Nofollow {
			sum += math.Hypot(a.x-b.x, a.y-b.y)
			n++
		}
	}
	return sum / float64(max(n, 1))
}

// TestRebuildNoMap: a negative MapTop leaves map_x and map_y empty.
func TestRebuildNoMap(t *testing.T) {
	dir := t.TempDir()
	if _, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf, MapTop: -1}); err != nil {
		t.Fatal(err)
	}
	if m := mapOf(t, dir); len(m) != 0 {
		t.Errorf("MapTop -1: %d domains placed", len(m))
	}
}

// TestRebuildMapPreviousWithoutMap: after a snapshot without a map (no
// positions, no fingerprint) the layout starts afresh.
func TestRebuildMapPreviousWithoutMap(t *testing.T) {
	dir := t.TempDir()
	if _, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf, MapTop: -1}); err != nil {
		t.Fatal(err)
	}
	if _, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if m := mapOf(t, dir); len(m) != 4 {
		t.Errorf("%d domains placed after a snapshot without a map, want the 4 ranked", len(m))
	}
}
