package rank

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/mapthenet/mapthenet/rank/edgefile"
)

func TestBuildCSR(t *testing.T) {
	// 0→1, 0→2 (twice), 1→2, 2→0, 3→3 (self-loop), 3→2; 4 isolated.
	src := []uint32{0, 0, 1, 0, 2, 3, 3}
	dst := []uint32{1, 2, 2, 2, 0, 3, 2}
	g, err := BuildCSR(5, src, dst, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := csrOf(5, []uint64{0, 1, 2, 5, 5, 5}, []uint32{2, 0, 0, 1, 3}, []uint32{2, 1, 1, 1, 0})
	if !equalCSR(g, want) {
		t.Errorf("got %+v\nwant %+v", g, want)
	}
	if g.InDegree(2) != 3 || g.NumEdges() != 5 {
		t.Errorf("InDegree(2) = %d, NumEdges = %d", g.InDegree(2), g.NumEdges())
	}
	if !slices.Equal(src, []uint32{0, 0, 1, 0, 2, 3, 3}) {
		t.Error("BuildCSR modified its input")
	}
}

func TestBuildCSRErrors(t *testing.T) {
	if _, err := BuildCSR(3, []uint32{0, 1}, []uint32{1}, 1); err == nil {
		t.Error("length mismatch: no error")
	}
	if _, err := BuildCSR(3, []uint32{0, 3}, []uint32{1, 1}, 1); err == nil {
		t.Error("source out of range: no error")
	}
	if _, err := BuildCSR(3, []uint32{0, 1}, []uint32{1, 7}, 1); err == nil {
		t.Error("target out of range: no error")
	}
	g, err := BuildCSR(0, nil, nil, 1)
	if err != nil || g.N != 0 || g.NumEdges() != 0 || g.Start(0) != 0 {
		t.Errorf("empty: %+v, %v", g, err)
	}
}

// TestBuildCSRInvariant: the same CSR for any workers and any edge order,
// on the parallel paths too, from edges with repeats and self-loops (the
// offsets rewritten by dedupe) and from the distinct edges alone (the
// offsets of the placement stand).
func TestBuildCSRInvariant(t *testing.T) {
	defer func(v int) { parallelMinEdges = v }(parallelMinEdges)
	parallelMinEdges = 1000
	src, dst := randomEdges(5, 3000, 50_000)
	// The same edges, each once, no self-loop.
	type e struct{ u, v uint32 }
	in := map[e]bool{}
	var usrc, udst []uint32
	for i := range src {
		if k := (e{src[i], dst[i]}); src[i] != dst[i] && !in[k] {
			in[k] = true
			usrc, udst = append(usrc, src[i]), append(udst, dst[i])
		}
	}
	if len(usrc) == len(src) {
		t.Fatal("the random edges have no repeat or self-loop: the dedupe path is not tested")
	}
	want, err := BuildCSR(3000, src, dst, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for name, edges := range map[string][2][]uint32{"repeats": {src, dst}, "distinct": {usrc, udst}} {
		src, dst := edges[0], edges[1]
		for _, w := range []int{1, 2, 3, 8} {
			r.Shuffle(len(src), func(i, j int) {
				src[i], src[j] = src[j], src[i]
				dst[i], dst[j] = dst[j], dst[i]
			})
			g, err := BuildCSR(3000, src, dst, w)
			if err != nil {
				t.Fatal(err)
			}
			if !equalCSR(g, want) {
				t.Fatalf("%s, workers %d, shuffled: CSR differs", name, w)
			}
			if err := g.check(); err != nil {
				t.Fatalf("%s, workers %d: %v", name, w, err)
			}
		}
	}
	// Every stored edge is a distinct input edge, no self-loops.
	if len(in) != want.NumEdges() {
		t.Errorf("%d distinct edges, CSR has %d", len(in), want.NumEdges())
	}
	for v := range want.N {
		for _, u := range want.In(v) {
			if !in[e{u, v}] {
				t.Fatalf("CSR edge %d→%d not in input", u, v)
			}
		}
	}
}

// TestBuildCSRMapped: buildCSR with perm (as rank --edges builds, from
// the reader's ids and renumber's map, which has ids no edge names) is
// BuildCSR of the mapped edges, for any workers and edge order, with
// 32-bit offsets and with offsets past them (offsetBits lowered).
func TestBuildCSRMapped(t *testing.T) {
	defer func(v int) { parallelMinEdges = v }(parallelMinEdges)
	defer func(b uint8) { offsetBits = b }(offsetBits)
	parallelMinEdges = 1000
	const n = 3000
	r := rand.New(rand.NewPCG(8, 8))
	// Ids 0..n+99 of which every 31st names no node: perm maps the others
	// onto 0..n-1 and those to 0.
	var perm []uint32
	idOf := make([]uint32, n) // the id that names node v
	nodes, next := r.Perm(n), 0
	for id := range uint32(n + 100) {
		if id%31 == 7 && id/31 < 100 {
			perm = append(perm, 0)
			continue
		}
		v := nodes[next]
		next++
		perm = append(perm, uint32(v))
		idOf[v] = id
	}
	src, dst := randomEdges(9, n, 50_000)
	for i := range src { // the ids of the nodes src[i] and dst[i]
		src[i], dst[i] = idOf[src[i]], idOf[dst[i]]
	}
	msrc, mdst := make([]uint32, len(src)), make([]uint32, len(src))
	for i := range src {
		msrc[i], mdst[i] = perm[src[i]], perm[dst[i]]
	}
	for _, bits := range []uint8{32, 6} {
		offsetBits = bits
		want, err := BuildCSR(n, msrc, mdst, 1)
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []int{1, 2, 3, 8} {
			// Shuffled (runs of one edge, mostly), then grouped by
			// source (long runs, which the parts cut).
			for _, grouped := range []bool{false, true} {
				r.Shuffle(len(src), func(i, j int) {
					src[i], src[j] = src[j], src[i]
					dst[i], dst[j] = dst[j], dst[i]
				})
				if grouped {
					sort.Stable(byFirst{src, dst})
				}
				g, err := buildCSR(n, edgefile.RunsOf(src), dst, perm, w)
				if err != nil {
					t.Fatal(err)
				}
				if !equalCSR(g, want) {
					t.Fatalf("offset bits %d, workers %d, grouped %v: CSR differs from the mapped edges'", bits, w, grouped)
				}
			}
		}
	}
	if _, err := buildCSR(n, edgefile.RunsOf([]uint32{0, n + 100}), []uint32{1, 2}, perm, 1); err == nil {
		t.Error("an id past perm: no error")
	}
	if _, err := buildCSR(n, []edgefile.Run{{ID: 0, N: 3}}, []uint32{1, 2}, perm, 1); err == nil {
		t.Error("runs of 3 rows for 2 targets: no error")
	}
}

func equalCSR(a, b *CSR) bool {
	if a.N != b.N || !slices.Equal(a.Sources, b.Sources) || !slices.Equal(a.OutDegree, b.OutDegree) {
		return false
	}
	for v := range a.N + 1 {
		if a.Start(v) != b.Start(v) {
			return false
		}
	}
	return true
}

// csrOf is the CSR of n nodes whose node v's in-edges are
// sources[starts[v]:starts[v+1]].
func csrOf(n uint32, starts []uint64, sources, out []uint32) *CSR {
	deg := make([]uint32, n+1)
	for v := range n {
		deg[v] = uint32(starts[v+1] - starts[v])
	}
	return &CSR{N: n, Sources: sources, OutDegree: out, offsets: offsetsOfDegrees(deg)}
}

// TestRenumber: new ids go by the number of edges a name is the source
// of, most first; the order is the same for any order of the input, any
// sharding and any workers, also when the hash in the key leaves many
// ties (broken by name); every edge keeps its names.
func TestRenumber(t *testing.T) {
	defer func(v int) { parallelMinEdges = v }(parallelMinEdges)
	defer func(v uint) { orderHashShift = v }(orderHashShift)
	names := []string{"b.com", "a.com", "abcdefgh.com", "abcdefgh.co", "abcdefg", "", "c.org", "abcdefghij.net"}
	for i := range 200 {
		names = append(names, fmt.Sprintf("x%03d.net", 199-i))
	}
	// A ring (one edge from each name), then more edges from some:
	// x150.net (index 57) is the source of 4, b.com and x010.net of 3,
	// c.org of 2.
	var src, dst []uint32
	for i := range names {
		src, dst = append(src, uint32(i)), append(dst, uint32((i+1)%len(names)))
	}
	for _, more := range [][2]int{{57, 3}, {0, 2}, {197, 2}, {6, 1}} {
		for k := range more[1] {
			src, dst = append(src, uint32(more[0])), append(dst, uint32(k))
		}
	}
	count := map[string]int{}
	for _, s := range src {
		count[names[s]]++
	}
	r := rand.New(rand.NewPCG(7, 7))
	for _, shift := range []uint{16, 62} { // 48 bits of hash, then 2
		orderHashShift = shift
		var want []string
		for _, minEdges := range []int{1 << 20, 16} {
			parallelMinEdges = minEdges
			for _, workers := range []int{1, 2, 3, 8} {
				// The names in another order, in one shard or two.
				p := r.Perm(len(names))
				shuffled := make([]string, len(names))
				for old, nw := range p {
					shuffled[nw] = names[old]
				}
				s, d := make([]uint32, len(src)), make([]uint32, len(src))
				for i := range src {
					s[i], d[i] = uint32(p[src[i]]), uint32(p[dst[i]])
				}
				var in *edgefile.Names
				var err error
				if workers%2 == 0 {
					in, err = edgefile.NamesOf(shuffled)
				} else {
					// Part k holds the names whose index is k mod 2, so
					// part k's i-th name, id i*2+k, keeps its index.
					var sh [2][]string
					for i, n := range shuffled {
						sh[i%2] = append(sh[i%2], n)
					}
					in, err = edgefile.NamesOf(sh[:]...)
				}
				if err != nil {
					t.Fatal(err)
				}
				renumbered, perm := renumber(in, edgefile.RunsOf(s), workers)
				for i := range s {
					s[i], d[i] = perm[s[i]], perm[d[i]]
				}
				got := make([]string, renumbered.Len())
				for i := range got {
					got[i] = renumbered.Name(uint32(i))
				}
				if len(got) != len(names) || got[0] != "x150.net" || count[got[1]] != 3 || count[got[2]] != 3 || got[3] != "c.org" {
					t.Fatalf("shift %d, workers %d: order starts %q", shift, workers, got[:5])
				}
				if !slices.IsSortedFunc(got, func(a, b string) int { return count[b] - count[a] }) {
					t.Fatalf("shift %d, workers %d: not by count: %q", shift, workers, got)
				}
				if want == nil {
					want = got
				} else if !slices.Equal(got, want) {
					t.Fatalf("shift %d, workers %d: order differs from the first run", shift, workers)
				}
				for i := range src {
					if got[s[i]] != names[src[i]] || got[d[i]] != names[dst[i]] {
						t.Fatalf("shift %d, workers %d: edge %d renumbered wrongly", shift, workers, i)
					}
				}
			}
		}
	}
}

func TestRadixSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{1, 2, 255, 256, 1000, 70_000} {
		for _, limit := range []uint32{1, 300, 1 << 20, 1<<32 - 1} {
			a := make([]uint32, n)
			for i := range a {
				a[i] = uint32(r.Uint64N(uint64(limit) + 1))
			}
			want := slices.Sorted(slices.Values(a))
			radixSort(a, make([]uint32, n))
			if !slices.Equal(a, want) {
				t.Errorf("n %d, values up to %d: not sorted", n, limit)
			}
		}
	}
}

// TestOffsetsPast32Bits: the path of graphs of more than 2³² edges (the
// offsets' high bits as steps), taken by small graphs with offsetBits
// lowered, gives every node's offset, and the same CSR and PageRank
// scores, bit for bit, as 32-bit words do.
func TestOffsetsPast32Bits(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	deg := make([]uint32, 2001)
	want := make([]uint64, len(deg))
	var total uint64
	for v := range deg {
		want[v] = total
		if v < len(deg)-1 {
			deg[v] = uint32(r.IntN(40))
			if v%97 == 0 {
				deg[v] = 300 // spans several steps at once
			}
			total += uint64(deg[v])
		}
	}
	defer func(b uint8) { offsetBits = b }(offsetBits)
	for _, bits := range []uint8{32, 8, 5, 1} {
		offsetBits = bits
		o := offsetsOfDegrees(slices.Clone(deg))
		for v := range deg {
			if got := o.start(uint32(v)); got != want[v] {
				t.Fatalf("bits %d: start(%d) = %d, want %d", bits, v, got, want[v])
			}
		}
		if bits < 32 && len(o.steps) == 0 {
			t.Fatalf("bits %d: no steps", bits)
		}
	}

	defer func(v int) { parallelMinEdges = v }(parallelMinEdges)
	parallelMinEdges = 1000
	src, dst := randomEdges(5, 3000, 50_000)
	offsetBits = 32
	ref, err := BuildCSR(3000, src, dst, 2)
	if err != nil {
		t.Fatal(err)
	}
	refScores, err := PageRank(context.Background(), ref, Params{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	offsetBits = 7
	g, err := BuildCSR(3000, src, dst, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.offsets.steps) == 0 || !equalCSR(g, ref) {
		t.Fatalf("offsetBits 7: %d steps, CSR equal: %v", len(g.offsets.steps), equalCSR(g, ref))
	}
	res, err := PageRank(context.Background(), g, Params{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Scores, refScores.Scores) {
		t.Error("offsetBits 7: scores differ")
	}
}

// byFirst sorts edges (a, b pairs) by a.
type byFirst struct{ a, b []uint32 }

func (e byFirst) Len() int           { return len(e.a) }
func (e byFirst) Less(i, j int) bool { return e.a[i] < e.a[j] }
func (e byFirst) Swap(i, j int) {
	e.a[i], e.a[j] = e.a[j], e.a[i]
	e.b[i], e.b[j] = e.b[j], e.b[i]
}
