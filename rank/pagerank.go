// Package rank computes domain ranks over a compact in-memory graph (CSR of
// uint32 ids): PageRank as DESIGN.md defines it, and the ordering of scores
// into ranks. RankEdgeFile does it all for a Parquet edge list.
//
// Results are reproducible bit for bit: the same graph gives the same
// scores for any number of workers, because work is cut into chunks that
// depend on the graph only and every sum is added up in chunk order.
package rank

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
)

// Params are PageRank's parameters (DESIGN.md, "Ranks"). A zero Damping,
// Tolerance or MaxIterations takes DefaultParams' value.
type Params struct {
	Damping       float64 // 0.85
	Tolerance     float64 // stop when the L1 change between iterations is below this: 1e-9
	MaxIterations int     // 100
	Workers       int     // 0: GOMAXPROCS
}

// DefaultParams are DESIGN.md's.
var DefaultParams = Params{Damping: 0.85, Tolerance: 1e-9, MaxIterations: 100}

// withDefaults fills zero fields and checks the rest.
func (p Params) withDefaults() (Params, error) {
	if p.Damping == 0 {
		p.Damping = DefaultParams.Damping
	}
	if p.Tolerance == 0 {
		p.Tolerance = DefaultParams.Tolerance
	}
	if p.MaxIterations == 0 {
		p.MaxIterations = DefaultParams.MaxIterations
	}
	if p.Workers <= 0 {
		p.Workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case !(p.Damping > 0 && p.Damping < 1):
		return p, fmt.Errorf("rank: damping %v not in (0,1)", p.Damping)
	case !(p.Tolerance > 0):
		return p, fmt.Errorf("rank: tolerance %v not positive", p.Tolerance)
	case p.MaxIterations < 0:
		return p, fmt.Errorf("rank: max iterations %d negative", p.MaxIterations)
	}
	return p, nil
}

// CSR is a directed graph of N nodes stored by in-edges: the sources of the
// edges into v are Sources[Offsets[v]:Offsets[v+1]], in increasing order.
// OutDegree counts each node's distinct out-edges. Self-loops and
// duplicate edges are not stored. Build one with BuildCSR.
type CSR struct {
	N         uint32
	Offsets   []uint32 // len N+1
	Sources   []uint32
	OutDegree []uint32
}

// InDegree is the number of distinct nodes linking to v.
func (g *CSR) InDegree(v uint32) uint32 { return g.Offsets[v+1] - g.Offsets[v] }

// NumEdges is the number of distinct edges.
func (g *CSR) NumEdges() int { return len(g.Sources) }

// Result is what PageRank returns.
type Result struct {
	Scores     []float64 // sum to 1
	Iterations int
	Residual   float64 // L1 change of the last iteration
}

// chunkCost is the work (in-edges plus nodes) in one chunk. Chunks are the
// unit both of parallel work and of summation order, so they must depend
// on the graph alone, never on the number of workers.
const chunkCost = 1 << 15

// chunks cuts 0..N into node ranges of about chunkCost work each:
// bounds[i]..bounds[i+1] is chunk i.
func (g *CSR) chunks() []uint32 {
	bounds := []uint32{0}
	cost := 0
	for v := uint32(0); v < g.N; v++ {
		cost += 1 + int(g.Offsets[v+1]-g.Offsets[v])
		if cost >= chunkCost {
			bounds = append(bounds, v+1)
			cost = 0
		}
	}
	if bounds[len(bounds)-1] != g.N {
		bounds = append(bounds, g.N)
	}
	return bounds
}

// forChunks runs fn(i) for every chunk i on up to workers goroutines and
// returns when all are done. Chunks are handed out in order from a shared
// counter so a few heavy chunks do not stall one worker.
func forChunks(nchunks, workers int, fn func(i int)) {
	if workers <= 1 || nchunks <= 1 {
		for i := range nchunks {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, nchunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= nchunks {
					return
				}
				fn(i)
			}
		}()
	}
	wg.Wait()
}

// PageRank computes the scores of DESIGN.md's "Ranks" (igraph's PRPACK
// semantics) by power iteration, pulling over in-edges: every node gets
// (1-d)/N of teleport plus d times the sum of score/outdegree of the nodes
// linking to it, plus d times its share of the score of dangling nodes
// (no out-edge), spread uniformly. It starts from the uniform vector and
// stops when the L1 change of an iteration is below p.Tolerance or after
// p.MaxIterations iterations. The scores are scaled to sum to exactly 1 up
// to rounding. ctx is checked between iterations.
func PageRank(ctx context.Context, g *CSR, p Params) (Result, error) {
	p, err := p.withDefaults()
	if err != nil {
		return Result{}, err
	}
	n := int(g.N)
	if n == 0 {
		return Result{Scores: []float64{}}, nil
	}
	if len(g.Offsets) != n+1 || len(g.OutDegree) != n {
		return Result{}, fmt.Errorf("rank: malformed CSR: %d nodes, %d offsets, %d out-degrees", n, len(g.Offsets), len(g.OutDegree))
	}
	bounds := g.chunks()
	nchunks := len(bounds) - 1
	d := p.Damping
	invN := 1 / float64(n)

	// invOut[u] = 1/outdegree(u), 0 for dangling nodes. contrib[u] =
	// x[u]*invOut[u] is what u gives each of its targets.
	invOut := makeLarge[float64](n, n)
	x := makeLarge[float64](n, n)
	next := makeLarge[float64](n, n)
	contrib := makeLarge[float64](n, n)
	nextContrib := makeLarge[float64](n, n)
	diffs := make([]float64, nchunks)
	dangs := make([]float64, nchunks)

	// Start: uniform; the dangling mass is summed per chunk too.
	forChunks(nchunks, p.Workers, func(c int) {
		dang := 0.0
		for v := bounds[c]; v < bounds[c+1]; v++ {
			x[v] = invN
			if od := g.OutDegree[v]; od > 0 {
				invOut[v] = 1 / float64(od)
				contrib[v] = invN * invOut[v]
			} else {
				dang += invN
			}
		}
		dangs[c] = dang
	})
	dangling := sumInOrder(dangs)

	res := Result{}
	for res.Iterations < p.MaxIterations {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		base := (1-d)*invN + d*dangling*invN
		forChunks(nchunks, p.Workers, func(c int) {
			diffs[c], dangs[c] = iterateChunk(g, bounds[c], bounds[c+1], base, d, x, next, contrib, nextContrib, invOut)
		})
		x, next = next, x
		contrib, nextContrib = nextContrib, contrib
		dangling = sumInOrder(dangs)
		res.Residual = sumInOrder(diffs)
		res.Iterations++
		if res.Residual < p.Tolerance {
			break
		}
	}

	// Scale to sum to 1 (igraph does too): the iteration keeps the sum at
	// 1 only up to rounding.
	forChunks(nchunks, p.Workers, func(c int) {
		s := 0.0
		for v := bounds[c]; v < bounds[c+1]; v++ {
			s += x[v]
		}
		diffs[c] = s
	})
	total := sumInOrder(diffs)
	inv := 1 / total
	forChunks(nchunks, p.Workers, func(c int) {
		for v := bounds[c]; v < bounds[c+1]; v++ {
			x[v] *= inv
		}
	})
	res.Scores = x
	return res, nil
}

// iterateChunk computes the new scores of nodes lo..hi-1 and returns the
// chunk's L1 change and its new dangling mass. The in-edge sum uses four
// accumulators (a fixed order, so still reproducible) to hide the latency
// of floating-point adds: this loop is where PageRank spends its time.
func iterateChunk(g *CSR, lo, hi uint32, base, d float64, x, next, contrib, nextContrib, invOut []float64) (diff, dang float64) {
	offs := g.Offsets
	srcs := g.Sources
	for v := lo; v < hi; v++ {
		in := srcs[offs[v]:offs[v+1]]
		var s0, s1, s2, s3 float64
		for len(in) >= 4 {
			s0 += contrib[in[0]]
			s1 += contrib[in[1]]
			s2 += contrib[in[2]]
			s3 += contrib[in[3]]
			in = in[4:]
		}
		for _, u := range in {
			s0 += contrib[u]
		}
		xv := base + d*((s0+s1)+(s2+s3))
		diff += math.Abs(xv - x[v])
		next[v] = xv
		if io := invOut[v]; io != 0 {
			nextContrib[v] = xv * io
		} else {
			dang += xv
		}
	}
	return diff, dang
}

func sumInOrder(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
