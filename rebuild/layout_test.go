package rebuild

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

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

// prevRow is a domains.parquet row as far as readPrevMap cares, with a
// column it must skip.
type prevRow struct {
	Domain string   `parquet:"domain,dict"`
	Rank   *int64   `parquet:"rank,optional"`
	MapX   *float64 `parquet:"map_x,optional"`
	MapY   *float64 `parquet:"map_y,optional"`
}

// writePrev writes rows into a Parquet file in row groups of 7 rows and
// small pages, with the fingerprint entry when print is not "".
func writePrev[T any](t *testing.T, rows []T, print string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "domains.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := []parquet.WriterOption{parquet.MaxRowsPerRowGroup(7), parquet.PageBufferSize(64)}
	if print != "" {
		opts = append(opts, parquet.KeyValueMetadata(mapFingerprintKey, print))
	}
	w := parquet.NewGenericWriter[T](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadPrevMap: the positions of the wanted domains that have finite
// ones, across row groups and pages, and the fingerprint entry; files of
// another kind are errors.
func TestReadPrevMap(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	var rows []prevRow
	want := map[int64][2]float64{}
	for i := range 40 {
		r := prevRow{Domain: fmt.Sprintf("d%02d.example", i), MapX: f(float64(i)), MapY: f(-float64(i))}
		switch i % 5 {
		case 1:
			r.MapX, r.MapY = nil, nil // unranked: no position
		case 2:
			r.MapY = f(math.Inf(1))
		case 3:
			r.MapX = f(math.NaN())
		}
		if i%5 != 1 {
			r.Rank = new(int64)
		}
		rows = append(rows, r)
		if i%5 != 1 && i%5 != 2 && i%5 != 3 && i%2 == 0 { // finite and wanted
			want[int64(i)] = [2]float64{float64(i), -float64(i)}
		}
	}
	lookup := func(name []byte) int64 {
		var i int64
		if _, err := fmt.Sscanf(string(name), "d%02d.example", &i); err != nil || i%2 != 0 {
			return -1
		}
		return i
	}
	for _, print := range []string{"", "0123456789abcdef"} {
		path := writePrev(t, rows, print)
		got := map[int64][2]float64{}
		text, ok, err := readPrevMap(path, lookup, func(v int64, x, y float64) { got[v] = [2]float64{x, y} })
		if err != nil {
			t.Fatal(err)
		}
		if text != print || ok != (print != "") {
			t.Errorf("fingerprint %q, %v; want %q", text, ok, print)
		}
		if !maps.Equal(got, want) {
			t.Errorf("positions %v, want %v", got, want)
		}
	}

	type stringMap struct {
		Domain string `parquet:"domain"`
		MapX   string `parquet:"map_x"`
		MapY   string `parquet:"map_y"`
	}
	type noMap struct {
		Domain string `parquet:"domain"`
	}
	garbage := filepath.Join(t.TempDir(), "garbage.parquet")
	if err := os.WriteFile(garbage, []byte("PAR1 this is not a Parquet file PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"map as text": writePrev(t, []stringMap{{"a.example", "1", "2"}}, ""),
		"no map":      writePrev(t, []noMap{{"a.example"}}, ""),
		"garbage":     garbage,
	} {
		_, _, err := readPrevMap(path, lookup, func(int64, float64, float64) {})
		if !errors.Is(err, ErrNotParquet) {
			t.Errorf("%s: %v, want ErrNotParquet", name, err)
		}
	}
}
