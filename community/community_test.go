package community

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// sbm is a stochastic block model: n nodes in blocks of size, each node
// linking to about in others of its block and out of other blocks (as
// directed edges), as an in-edge CSR; block[v] is v's planted block.
type sbm struct {
	n        uint32
	src, dst []uint32
	block    []int32
}

func newSBM(seed uint64, n, size, in, out int) *sbm {
	r := rand.New(rand.NewPCG(seed, 1))
	g := &sbm{n: uint32(n), block: make([]int32, n)}
	blocks := n / size
	for v := range n {
		g.block[v] = int32(v / size)
	}
	for v := range n {
		b := v / size
		for range in {
			u := b*size + r.IntN(size)
			if u != v {
				g.src, g.dst = append(g.src, uint32(v)), append(g.dst, uint32(u))
			}
		}
		for range out {
			ob := r.IntN(blocks - 1)
			if ob >= b {
				ob++
			}
			g.src, g.dst = append(g.src, uint32(v)), append(g.dst, uint32(ob*size+r.IntN(size)))
		}
	}
	return g
}

// csr is the in-edge CSR of edges src→dst (self-loops dropped, repeats
// kept once), as rank.BuildCSR makes it.
func csr(n uint32, src, dst []uint32) (offsets, sources []uint32) {
	in := make([][]uint32, n)
	for i := range src {
		if src[i] != dst[i] {
			in[dst[i]] = append(in[dst[i]], src[i])
		}
	}
	offsets = make([]uint32, n+1)
	for v := range n {
		s := in[v]
		slices.Sort(s)
		s = slices.Compact(s)
		sources = append(sources, s...)
		offsets[v+1] = uint32(len(sources))
	}
	return offsets, sources
}

// nmi is the normalised mutual information of two labellings of the same
// nodes, 2·I(A;B) / (H(A) + H(B)): 1 when they are the same partition,
// near 0 when independent. Label -1 is a label like any other.
func nmi(a, b []int32) float64 {
	n := float64(len(a))
	ca, cb := map[int32]float64{}, map[int32]float64{}
	joint := map[[2]int32]float64{}
	for i := range a {
		ca[a[i]]++
		cb[b[i]]++
		joint[[2]int32{a[i], b[i]}]++
	}
	h := func(c map[int32]float64) float64 {
		s := 0.0
		for _, x := range c {
			s -= x / n * math.Log(x/n)
		}
		return s
	}
	mi := 0.0
	for k, x := range joint {
		mi += x / n * math.Log(x*n/(ca[k[0]]*cb[k[1]]))
	}
	ha, hb := h(ca), h(cb)
	if ha+hb == 0 {
		return 1
	}
	return 2 * mi / (ha + hb)
}

func TestNMI(t *testing.T) {
	for _, c := range []struct {
		a, b []int32
		want float64
	}{
		{[]int32{0, 0, 1, 1}, []int32{5, 5, 3, 3}, 1},
		{[]int32{0, 0, 1, 1}, []int32{0, 1, 0, 1}, 0},
		{[]int32{0, 0, 0, 0}, []int32{1, 1, 1, 1}, 1},
	} {
		if got := nmi(c.a, c.b); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("nmi(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func detect(t *testing.T, n uint32, src, dst []uint32, p Params) *Result {
	t.Helper()
	off, sources := csr(n, src, dst)
	res, err := Detect(context.Background(), n, inOf(off, sources), p)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestPlanted: the planted blocks of a 10k-node stochastic block model
// are found again (normalised mutual information at least 0.9).
func TestPlanted(t *testing.T) {
	for _, c := range []struct {
		name          string
		size, in, out int
	}{
		{"20 blocks of 500, 8 in 2 out", 500, 8, 2},
		{"50 blocks of 200, 6 in 2 out", 200, 6, 2},
		{"10 blocks of 1000, 10 in 4 out", 1000, 10, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := newSBM(1, 10_000, c.size, c.in, c.out)
			res := detect(t, g.n, g.src, g.dst, Params{})
			score := nmi(g.block, res.Community)
			t.Logf("%d communities, modularity %.3f, NMI %.4f", len(res.Sizes), res.Modularity, score)
			if score < 0.9 {
				t.Errorf("NMI %.4f with the planted blocks, want >= 0.9", score)
			}
		})
	}
}

// batched makes every level of 256 nodes or more sweep in parallel
// batches of about batch adjacency entries (which only big levels do
// otherwise) for the rest of the test.
func batched(t *testing.T, batch int) {
	oldMin, oldEdges := parallelMin, batchEdges
	parallelMin, batchEdges = 256, batch
	t.Cleanup(func() { parallelMin, batchEdges = oldMin, oldEdges })
}

// TestDeterministic: the same graph gives the same communities for any
// number of workers and any batch size, the same as sweeping one node at
// a time: the batches' parallel gathering changes only the speed.
func TestDeterministic(t *testing.T) {
	g := newSBM(2, 20_000, 100, 5, 3) // many small communities: aggregation splits across workers
	want := detect(t, g.n, g.src, g.dst, Params{Workers: 1})
	for _, c := range []struct {
		workers, batch int
	}{{1, 1 << 16}, {2, 1 << 16}, {2, 64}, {3, 1000}, {8, 1}, {8, 1 << 16}} {
		t.Run(fmt.Sprintf("workers %d, batches of %d", c.workers, c.batch), func(t *testing.T) {
			batched(t, c.batch)
			res := detect(t, g.n, g.src, g.dst, Params{Workers: c.workers, MoveWorkers: c.workers})
			if !slices.Equal(res.Community, want.Community) || res.Modularity != want.Modularity {
				t.Errorf("different communities (modularity %v, one at a time %v)", res.Modularity, want.Modularity)
			}
		})
	}
}

// TestRefine: refinement (Params.RefineSweeps) does not lower the
// modularity, here raises it after a level-0 stop at one sweep, and gives
// the same communities for any number of workers and any batch size
// (refinement starts local moving from communities, not single nodes).
func TestRefine(t *testing.T) {
	g := newSBM(3, 20_000, 100, 4, 4)
	plain := detect(t, g.n, g.src, g.dst, Params{Workers: 1, MaxSweeps: 1})
	want := detect(t, g.n, g.src, g.dst, Params{Workers: 1, MaxSweeps: 1, RefineSweeps: 1})
	t.Logf("modularity %.4f, refined %.4f", plain.Modularity, want.Modularity)
	if want.Modularity < plain.Modularity+0.01 { // 0.375 to 0.485 when written
		t.Errorf("refined modularity %v, not clearly above %v", want.Modularity, plain.Modularity)
	}
	for _, c := range []struct {
		workers, batch int
	}{{2, 1 << 16}, {2, 64}, {3, 1000}} {
		t.Run(fmt.Sprintf("workers %d, batches of %d", c.workers, c.batch), func(t *testing.T) {
			batched(t, c.batch)
			res := detect(t, g.n, g.src, g.dst, Params{Workers: c.workers, MoveWorkers: c.workers, MaxSweeps: 1, RefineSweeps: 1})
			if !slices.Equal(res.Community, want.Community) || res.Modularity != want.Modularity {
				t.Errorf("different communities (modularity %v, one at a time %v)", res.Modularity, want.Modularity)
			}
		})
	}
}

func TestIsolatedAndEmpty(t *testing.T) {
	// 0-1-2 a triangle, 3 alone, 4→5 a pair.
	res := detect(t, 6, []uint32{0, 1, 2, 4}, []uint32{1, 2, 0, 5}, Params{})
	want := []int32{0, 0, 0, -1, 1, 1}
	if !slices.Equal(res.Community, want) {
		t.Errorf("communities %v, want %v", res.Community, want)
	}
	if !slices.Equal(res.Sizes, []int32{3, 2}) {
		t.Errorf("sizes %v, want [3 2]", res.Sizes)
	}
	res = detect(t, 3, nil, nil, Params{})
	if !slices.Equal(res.Community, []int32{-1, -1, -1}) || len(res.Sizes) != 0 {
		t.Errorf("no edges: %v %v, want all -1 and no communities", res.Community, res.Sizes)
	}
}

func TestBadInput(t *testing.T) {
	off, sources := []uint32{0, 1, 1}, []uint32{7}
	if _, err := Detect(context.Background(), 2, inOf(off, sources), Params{}); err == nil {
		t.Error("source out of range: no error")
	}
}

// inOf is Detect's view of an in-edge CSR of 32-bit offsets.
func inOf(off, sources []uint32) func(v uint32) []uint32 {
	return func(v uint32) []uint32 { return sources[off[v]:off[v+1]] }
}

func TestCancelled(t *testing.T) {
	g := newSBM(1, 10_000, 500, 8, 2)
	off, sources := csr(g.n, g.src, g.dst)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Detect(ctx, g.n, inOf(off, sources), Params{}); err == nil {
		t.Error("a cancelled context: no error")
	}
}

func TestByDegree(t *testing.T) {
	for _, tc := range []struct {
		deg, byDeg []uint32
	}{
		{nil, []uint32{}},
		{[]uint32{0}, []uint32{0}},
		{[]uint32{1, 3, 0, 3, 2, 1}, []uint32{1, 3, 4, 0, 5, 2}}, // equal degrees in node order
	} {
		byDeg, label := byDegree(tc.deg)
		if !slices.Equal(byDeg, tc.byDeg) {
			t.Errorf("byDegree(%v): %v, want %v", tc.deg, byDeg, tc.byDeg)
		}
		for i, v := range byDeg {
			if label[v] != uint32(i) {
				t.Errorf("byDegree(%v): label[%d] = %d, want %d", tc.deg, v, label[v], i)
			}
		}
	}
}

// TestPickPrunes checks that pick, which skips the candidates whose weight
// cannot beat the best gain so far, chooses as a pass over every gain
// does, ties included (small weights and totals make many).
func TestPickPrunes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 2000 {
		n := 2 + r.IntN(12)
		g := &graph{n: n, k: make([]uint32, n)}
		for i := range g.k {
			g.k[i] = 1 + uint32(r.IntN(4))
		}
		m := &mover{g: g, comm: make([]int32, n), tot: make([]uint32, n), gamma: float64(1+r.IntN(3)) / 8}
		for i := range m.comm {
			m.comm[i] = int32(r.IntN(n))
		}
		for i, c := range m.comm {
			m.tot[c] += g.k[i]
		}
		i := r.IntN(n)
		cands := []cand{{c: m.comm[i], w: uint32(r.IntN(3)), gain: unknown}}
		for c := range int32(n) {
			if c != m.comm[i] && m.tot[c] > 0 && r.IntN(2) == 0 {
				cands = append(cands, cand{c: c, w: 1 + uint32(r.IntN(3)), gain: unknown})
			}
		}
		r.Shuffle(len(cands), func(a, b int) { cands[a], cands[b] = cands[b], cands[a] })

		// Every gain, then the best: greatest gain, staying on a tie,
		// else the smallest community.
		ci, ki := m.comm[i], float64(g.k[i])
		want, bestGain, stay := int32(-1), 0.0, 0.0
		for _, x := range cands {
			tot := float64(m.tot[x.c])
			if x.c == ci {
				tot -= ki
			}
			gain := float64(x.w) - m.gamma*ki*tot
			switch {
			case x.c == ci:
				stay = gain
			case want < 0 || gain > bestGain || (gain == bestGain && x.c < want):
				want, bestGain = x.c, gain
			}
		}
		if want < 0 || bestGain <= stay {
			want = ci
		}
		if got := m.pick(i, slices.Clone(cands)); got != want {
			t.Fatalf("trial %d: pick(%d, %+v) = %d, want %d", trial, i, cands, got, want)
		}
	}
}
