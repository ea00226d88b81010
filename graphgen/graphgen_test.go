package graphgen

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
)

type edge struct {
	src, dst uint32
	nofollow bool
}

func collect(t *testing.T, g *Generator) []edge {
	t.Helper()
	var es []edge
	if err := g.Edges(func(src, dst uint32, nf bool) error {
		es = append(es, edge{src, dst, nf})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return es
}

func TestShape(t *testing.T) {
	for _, cfg := range []Config{
		{Domains: 5000, Edges: 50_000, Seed: 7},
		{Domains: 5000, Edges: 50_000, Seed: 7, Communities: 10},
		{Domains: 3, Edges: 2, Seed: 1},
		{Domains: 10, Edges: 0, Seed: 1},
	} {
		g, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		es := collect(t, g)
		if int64(len(es)) != cfg.Edges {
			t.Errorf("%+v: %d edges, want %d", cfg, len(es), cfg.Edges)
		}
		seen := map[[2]uint32]bool{}
		in := make([]int, cfg.Domains)
		out := make([]int, cfg.Domains)
		nofollow, intra := 0, 0
		for i, e := range es {
			if e.src == e.dst {
				t.Fatalf("self-loop %d", e.src)
			}
			if i > 0 && es[i-1].src > e.src {
				t.Fatal("not grouped by source")
			}
			k := [2]uint32{e.src, e.dst}
			if seen[k] {
				t.Fatalf("duplicate edge %v", k)
			}
			seen[k] = true
			in[e.dst]++
			out[e.src]++
			if e.nofollow {
				nofollow++
			}
			if g.Community(e.src) == g.Community(e.dst) {
				intra++
			}
		}
		for id, d := range out {
			if d != g.OutDegree(uint32(id)) {
				t.Fatalf("OutDegree(%d) = %d, edges say %d", id, g.OutDegree(uint32(id)), d)
			}
		}
		if cfg.Domains < 1000 {
			continue
		}
		dangling, maxIn := 0, 0
		for id := range out {
			if out[id] == 0 {
				dangling++
			}
			maxIn = max(maxIn, in[id])
		}
		share := float64(dangling) / float64(cfg.Domains)
		if share < 0.3 || share > 0.4 {
			t.Errorf("dangling share %.3f", share)
		}
		if f := float64(nofollow) / float64(len(es)); f < 0.02 || f > 0.04 {
			t.Errorf("nofollow share %.3f", f)
		}
		// Power law: the most linked domain gets far more than the mean 10.
		if maxIn < 100 {
			t.Errorf("max in-degree %d: not heavy-tailed", maxIn)
		}
		if cfg.Communities > 1 {
			if f := float64(intra) / float64(len(es)); f < 0.85 {
				t.Errorf("intra-community share %.3f", f)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	cfg := Config{Domains: 2000, Edges: 20_000, Seed: 42}
	g1, _ := New(cfg)
	g2, _ := New(cfg)
	a, b := collect(t, g1), collect(t, g2)
	if len(a) != len(b) {
		t.Fatal("lengths differ")
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("edge %d differs: %v vs %v", i, a[i], b[i])
		}
	}
	cfg.Seed = 43
	g3, _ := New(cfg)
	c := collect(t, g3)
	same := 0
	for i := range min(len(a), len(c)) {
		if a[i] == c[i] {
			same++
		}
	}
	if same > len(a)/2 {
		t.Errorf("another seed gives mostly the same graph (%d of %d edges)", same, len(a))
	}
}

var domainRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z]{2,})+$`)

func TestNames(t *testing.T) {
	g, _ := New(Config{Domains: 100_000, Edges: 10, Seed: 1})
	seen := map[string]uint32{}
	tlds := map[string]bool{}
	for id := range uint32(100_000) {
		n := g.Name(id)
		if !domainRE.MatchString(n) || len(n) > 253 {
			t.Fatalf("Name(%d) = %q: not a domain", id, n)
		}
		if prev, dup := seen[n]; dup {
			t.Fatalf("Name(%d) = Name(%d) = %q", id, prev, n)
		}
		seen[n] = id
		for _, p := range patterns {
			if len(n) > len(p.tld) && n[len(n)-len(p.tld):] == p.tld {
				tlds[p.tld] = true
			}
		}
	}
	if !tlds[".co.uk"] || len(tlds) < 8 {
		t.Errorf("too few TLDs: %v", tlds)
	}
}

func TestEdgesStopsOnError(t *testing.T) {
	g, _ := New(Config{Domains: 100, Edges: 500, Seed: 1})
	stop := errors.New("stop")
	n := 0
	err := g.Edges(func(_, _ uint32, _ bool) error {
		n++
		if n == 10 {
			return stop
		}
		return nil
	})
	if err != stop || n != 10 {
		t.Fatalf("err %v after %d edges", err, n)
	}
}

func TestBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Domains: 1, Edges: 0},
		{Domains: 10, Edges: 1000},
		{Domains: 10, Edges: 5, ZipfS: 0.5},
		{Domains: 10, Edges: 5, Communities: 6},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v): no error", cfg)
		}
	}
	if _, err := Size("XXL"); err == nil {
		t.Error("Size(XXL): no error")
	}
	if c, err := Size("m"); err != nil || c.Domains != 1_000_000 {
		t.Errorf("Size(m) = %+v, %v", c, err)
	}
}

func TestWriteEdgesParquet(t *testing.T) {
	g, _ := New(Config{Domains: 3000, Edges: 30_000, Seed: 3})
	path := filepath.Join(t.TempDir(), "edges.parquet")
	if err := g.WriteEdgesParquet(path); err != nil {
		t.Fatal(err)
	}
	rows, err := parquet.ReadFile[EdgeRow](path)
	if err != nil {
		t.Fatal(err)
	}
	es := collect(t, g)
	if len(rows) != len(es) {
		t.Fatalf("%d rows, want %d", len(rows), len(es))
	}
	for i, e := range es {
		want := EdgeRow{Src: g.Name(e.src), Dst: g.Name(e.dst), Nofollow: e.nofollow}
		if rows[i] != want {
			t.Fatalf("row %d = %+v, want %+v", i, rows[i], want)
		}
	}
}

// TestWriteIDEdgesParquet: the edge file of ids holds the graph's edges,
// sorted by (src_id, dst_id), the same file for any workers.
func TestWriteIDEdgesParquet(t *testing.T) {
	g, _ := New(Config{Domains: 3000, Edges: 30_000, Seed: 3})
	want := map[[2]int32]bool{}
	g.Edges(func(s, d uint32, nofollow bool) error {
		want[[2]int32{int32(s), int32(d)}] = nofollow
		return nil
	})
	var files [][]byte
	for _, w := range []int{1, 3} {
		path := filepath.Join(t.TempDir(), "ids.parquet")
		if err := g.WriteIDEdgesParquet(path, IDFileOptions{RowGroupRows: 4096, Workers: w}); err != nil {
			t.Fatal(err)
		}
		rows, err := parquet.ReadFile[IDEdgeRow](path)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != len(want) {
			t.Fatalf("%d rows, want %d", len(rows), len(want))
		}
		for i, r := range rows {
			if nf, ok := want[[2]int32{r.SrcID, r.DstID}]; !ok || nf != r.Nofollow {
				t.Fatalf("row %d: %+v not an edge", i, r)
			}
			if i > 0 && (r.SrcID < rows[i-1].SrcID || r.SrcID == rows[i-1].SrcID && r.DstID <= rows[i-1].DstID) {
				t.Fatalf("row %d: %+v after %+v", i, r, rows[i-1])
			}
		}
		b, _ := os.ReadFile(path)
		files = append(files, b)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Error("the file differs with the workers")
	}
}

// TestSinks: with SinkShare, about that share of the domains, all of them
// dangling without it, form closed cycles of 2 and 3 (each member's one
// edge goes to the next, followed), NumEdges counts their edges, and the
// rest of the graph is edge for edge the graph without sinks.
func TestSinks(t *testing.T) {
	base := Config{Domains: 20_000, Edges: 150_000, Seed: 3}
	plain, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	withSinks := base
	withSinks.SinkShare = 0.05
	g, err := New(withSinks)
	if err != nil {
		t.Fatal(err)
	}
	es := collect(t, g)
	if int64(len(es)) != g.NumEdges() || g.NumEdges() <= base.Edges {
		t.Fatalf("%d edges, NumEdges %d, without sinks %d", len(es), g.NumEdges(), base.Edges)
	}
	next := map[uint32]uint32{}
	var rest []edge
	for _, e := range es {
		if plain.OutDegree(e.src) == 0 {
			if _, twice := next[e.src]; twice || e.nofollow || g.OutDegree(e.src) != 1 {
				t.Fatalf("sink member %d: a second edge, a nofollow one or out-degree %d", e.src, g.OutDegree(e.src))
			}
			next[e.src] = e.dst
			continue
		}
		rest = append(rest, e)
	}
	if want := int(0.05 * float64(base.Domains)); len(next) < want-2 || len(next) > want {
		t.Fatalf("%d sink members, want about %d", len(next), want)
	}
	lengths := map[int]int{}
	for m := range next {
		l, v := 1, next[m]
		for ; v != m && l <= 3; l++ {
			if _, ok := next[v]; !ok {
				t.Fatalf("sink member %d links to %d, not a member", m, v)
			}
			v = next[v]
		}
		lengths[l]++
	}
	if len(lengths) != 2 || lengths[2] == 0 || lengths[3] == 0 {
		t.Fatalf("cycle lengths (by member): %v, want cycles of 2 and 3 only", lengths)
	}
	if want := collect(t, plain); len(rest) != len(want) || !slices.Equal(rest, want) {
		t.Fatal("the graph besides the sinks differs from the graph without sinks")
	}
	c, err := Size("m+Sinks")
	if err != nil || c.SinkShare != DefaultSinkShare || c.Domains != Sizes["M"].Domains {
		t.Fatalf("Size(m+Sinks) = %+v, %v", c, err)
	}
	if _, err := New(Config{Domains: 100, Edges: 100, SinkShare: 0.5}); err == nil {
		t.Fatal("SinkShare above DanglingShare accepted")
	}
}
