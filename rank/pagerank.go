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
	"log/slog"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Params are PageRank's parameters (DESIGN.md, "Ranks"). A zero Damping,
// Tolerance or MaxIterations takes DefaultParams' value.
type Params struct {
	Damping       float64 // 0.85
	Tolerance     float64 // stop when the L1 change between iterations is below this: 1e-9
	MaxIterations int     // 100
	Workers       int     // 0: GOMAXPROCS
	// Progress, when not nil, is told of every iteration, between
	// iterations on PageRank's goroutine: for logs (see LogProgress).
	Progress func(Progress)
}

// Progress is where PageRank stands after an iteration.
type Progress struct {
	Iteration      int     // from 1
	Change         float64 // the iteration's L1 change
	Tolerance      float64 // the change it stops below
	Extrapolations int     // kept so far
}

// LogProgress is a Params.Progress that logs an iteration at most every
// every (all of them at 0), saying how far the change is from the
// tolerance: at the web's scale PageRank runs for half an hour.
func LogProgress(logger *slog.Logger, every time.Duration) func(Progress) {
	start := time.Now()
	last := start
	return func(p Progress) {
		now := time.Now()
		if now.Sub(last) < every {
			return
		}
		last = now
		logger.Info("pagerank iteration", "iteration", p.Iteration, "change", p.Change, "tolerance", p.Tolerance,
			"extrapolations", p.Extrapolations, "seconds", math.Round(10*now.Sub(start).Seconds())/10)
	}
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

// Result is what PageRank returns.
type Result struct {
	Scores     []float64 // sum to 1
	Iterations int
	Residual   float64 // L1 change of the last iteration
	// Float32Iterations of the Iterations kept the shares in float32 (the
	// first ones, on a large graph: see float32MinNodes).
	Float32Iterations int
	// ChangeIterations of the Iterations, on a large graph after the
	// Float32Iterations, gathered in float32 the change of each share
	// since the iteration before (see changeIterations).
	ChangeIterations int
	// Extrapolations is how many times the iteration jumped ahead and
	// kept the jump (on a graph that converges slowly: see extrapolator).
	Extrapolations int
}

// chunkCost is the work (in-edges plus nodes) in one chunk. Chunks are the
// unit both of parallel work and of summation order, so they must depend
// on the graph alone, never on the number of workers.
// A variable so that tests can make chunks small.
var chunkCost = 1 << 15

// chunks cuts 0..N into node ranges of about chunkCost work each:
// bounds[i]..bounds[i+1] is chunk i.
func (g *CSR) chunks() []uint32 {
	bounds := []uint32{0}
	cost := 0
	for v := uint32(0); v < g.N; v++ {
		cost += 1 + int(g.offsets.degree(v))
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
	forWorkerChunks(nchunks, workers, func(_, i int) { fn(i) })
}

// forWorkerChunks is forChunks telling fn which worker (0..workers-1)
// runs chunk i, so that a worker can keep scratch of its own.
func forWorkerChunks(nchunks, workers int, fn func(w, i int)) {
	if workers <= 1 || nchunks <= 1 {
		for i := range nchunks {
			fn(0, i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := range min(workers, nchunks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= nchunks {
					return
				}
				fn(w, i)
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
// p.MaxIterations iterations. On a graph where the change shrinks slowly
// and steadily it jumps ahead now and then (extrapolate.go). The scores
// are scaled to sum to exactly 1 up to rounding. ctx is checked between
// iterations.
func PageRank(ctx context.Context, g *CSR, p Params) (Result, error) {
	p, err := p.withDefaults()
	if err != nil {
		return Result{}, err
	}
	n := int(g.N)
	if n == 0 {
		return Result{Scores: []float64{}}, nil
	}
	if err := g.check(); err != nil {
		return Result{}, err
	}
	// iterateChunk reads contrib[u] for every source u without a bounds
	// check: every u must be below N.
	if err := g.checkSources(p.Workers); err != nil {
		return Result{}, err
	}
	bounds := g.chunks()
	nchunks := len(bounds) - 1
	d := p.Damping
	invN := 1 / float64(n)

	// x is updated in place: a node's old score is read only by itself.
	// contrib[u] = x[u]/outdegree(u) is what u gives each of its targets
	// (0 for a dangling node), read at random by the in-edge sums: it is
	// kept twice, the last iteration's and the next. Three vectors of 8
	// bytes a node in all (1/outdegree is computed as needed, not kept).
	x := makeLarge[float64](n, n)
	contrib := makeLarge[float64](n, n)
	nextContrib := makeLarge[float64](n, n)
	diffs := make([]float64, nchunks)
	dangs := make([]float64, nchunks)
	scratch := make([][]float64, p.Workers)
	for w := range scratch {
		scratch[w] = make([]float64, min(gatherChunks*chunkCost, g.NumEdges()))
	}

	// The first iterations of a large graph keep the shares in float32
	// (see float32MinNodes), in the first half of the float64 vectors'
	// memory: no more memory than the float64 iterations after them. Those
	// then gather float32 changes of the shares (see changeIterations),
	// in the same memory. Every iteration writes every node's entry of
	// nextContrib (0 for a dangling node), whatever the vector held before.
	narrow := n >= float32MinNodes
	narrowUntil := max(float32Until, 1e4*p.Tolerance)
	changes := false // the iterations after narrow ones gather changes
	full := false    // changes: the next iteration gathers float64 shares
	contrib32, nextContrib32 := float32View(contrib), float32View(nextContrib)
	swap := func() {
		contrib, nextContrib = nextContrib, contrib
		contrib32, nextContrib32 = nextContrib32, contrib32
	}
	scratch32 := make([][]float32, p.Workers)
	for w := range scratch {
		scratch32[w] = float32View(scratch[w])
	}

	// Start: uniform; the dangling mass is summed per chunk too.
	forChunks(nchunks, p.Workers, func(c int) {
		dang := 0.0
		for v := bounds[c]; v < bounds[c+1]; v++ {
			x[v] = invN
			if od := g.OutDegree[v]; od == 0 {
				dang += invN
			} else if narrow {
				contrib32[v] = float32(invN * (1 / float64(od)))
			} else {
				contrib[v] = invN * (1 / float64(od))
			}
		}
		dangs[c] = dang
	})
	dangling := sumInOrder(dangs)

	// rescale scales x to sum to 1 and sets the shares the next iteration
	// reads from it, float32 while narrow, float64 after (every entry: the
	// vector may hold float32 shares or changes). It returns the dangling
	// mass.
	rescale := func() float64 {
		inv := 1 / sumScores(x, bounds, diffs, p.Workers)
		forChunks(nchunks, p.Workers, func(c int) {
			dang := 0.0
			for v := bounds[c]; v < bounds[c+1]; v++ {
				xv := x[v] * inv
				x[v] = xv
				share := 0.0
				if od := g.OutDegree[v]; od == 0 {
					dang += xv
				} else {
					share = xv * (1 / float64(od))
				}
				if narrow {
					contrib32[v] = float32(share)
				} else {
					contrib[v] = share
				}
			}
			dangs[c] = dang
		})
		return sumInOrder(dangs)
	}

	res := Result{}
	var ex extrapolator
	lastBase := 0.0
	for res.Iterations < p.MaxIterations {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		base := (1-d)*invN + d*dangling*invN
		fromChanges := changes && !full
		switch {
		case narrow:
			forWorkerChunks(nchunks, p.Workers, func(w, c int) {
				diffs[c], dangs[c] = iterateChunk(g, bounds[c], bounds[c+1], base, d, x, contrib32, nextContrib32, scratch32[w], step{})
			})
			res.Float32Iterations++
		case fromChanges:
			forWorkerChunks(nchunks, p.Workers, func(w, c int) {
				diffs[c], dangs[c] = iterateChunk(g, bounds[c], bounds[c+1], base-lastBase, d, x, contrib32, nextContrib32, scratch32[w], step{fromChanges: true, toChanges: true})
			})
			res.ChangeIterations++
		case changes:
			forWorkerChunks(nchunks, p.Workers, func(w, c int) {
				diffs[c], dangs[c] = iterateChunk(g, bounds[c], bounds[c+1], base, d, x, contrib, nextContrib32, scratch[w], step{toChanges: true})
			})
			full = false
		default:
			forWorkerChunks(nchunks, p.Workers, func(w, c int) {
				diffs[c], dangs[c] = iterateChunk(g, bounds[c], bounds[c+1], base, d, x, contrib, nextContrib, scratch[w], step{})
			})
		}
		swap()
		lastBase = base
		dangling = sumInOrder(dangs)
		prev := res.Residual
		res.Residual = sumInOrder(diffs)
		res.Iterations++
		if p.Progress != nil {
			p.Progress(Progress{Iteration: res.Iterations, Change: res.Residual, Tolerance: p.Tolerance, Extrapolations: ex.count})
		}
		if res.Residual < p.Tolerance && !fromChanges {
			break
		}
		// Iterating on changes, the next iteration is a full one when the
		// next change is expected below the tolerance (this one times its
		// ratio to the last), so that the stopping rule is judged on a full
		// iteration, and after an extrapolation.
		expected := fromChanges && (res.Residual < p.Tolerance || res.Residual*res.Residual < p.Tolerance*prev)
		if jumped := ex.after(res.Iterations, res.Residual, prev, x, bounds, p.Workers); jumped || expected {
			full = changes
			dangling = rescale()
		}
		if narrow && res.Residual < narrowUntil {
			// On in float64, from the scores (kept in float64 all along),
			// scaled to sum to 1 again: the rounded shares did not give
			// away exactly the mass of the scores, and an error of the sum
			// shrinks only by d an iteration (the rest of an error, by the
			// graph's rate: a third or so on host graphs). Then the shares
			// again, at full precision, over the float32 ones, for one full
			// iteration, and changes after it.
			narrow, changes, full = false, true, true
			dangling = rescale()
			ex.restart()
		}
	}
	contrib, nextContrib, contrib32, nextContrib32, ex.hist = nil, nil, nil, nil, nil
	res.Extrapolations = ex.count

	// Scale to sum to 1 (igraph does too): the iteration keeps the sum at
	// 1 only up to rounding.
	inv := 1 / sumScores(x, bounds, diffs, p.Workers)
	forChunks(nchunks, p.Workers, func(c int) {
		for v := bounds[c]; v < bounds[c+1]; v++ {
			x[v] *= inv
		}
	})
	res.Scores = x
	return res, nil
}

// gatherChunks is how many chunks' worth of in-edges a worker's scratch
// holds: a chunk has about chunkCost, more only when it ends with a node
// of many in-edges. Tests set 0 to check the gathered sums against plain
// ones (sumShares).
var gatherChunks = 2

// float32MinNodes is the fewest nodes for which PageRank's first
// iterations keep the shares (contrib) in float32 rather than float64,
// until an iteration's L1 change is below float32Until (or 1e4 times the
// tolerance, if larger). Sums, scores and the change are float64 all
// along, and the iterations after start from a full float64 one (then
// see changeIterations), so the scores meet the same stopping rule from
// a start a little off the float64 path; the stopping rule is checked in
// either phase.
//
// Why: the gathers of the shares are nearly all of PageRank's time, and
// they wait on memory. Half as wide, twice as many of the shares the
// busiest sources give (ids in renumber's order) fit the caches: an
// iteration at L took 207 against 241 ms (best of 8, alternating).
//
// Why it is safe: rounding a share to float32 changes it by at most 2⁻²⁴
// of itself, so a float32 iteration's scores are off by at most about
// d·2⁻²⁴ (5e-8) in L1 from the float64 iteration's, far below
// float32Until: the float32 iterations converge as the float64 ones do
// until then. The iterations after wash that rounding out: each shrinks
// an error by the iteration's rate (about 0.3 on host graphs), but an
// error of the scores' sum only by d, so the scores are scaled to sum to
// 1 at the switch. On graphgen's L graph it took 11 float32 and 7 float64
// iterations, 18 as in float64 throughout; the scores differed from
// float64's throughout by 9.3e-13 in L1 (at most 2.3e-15, or 1.4e-9 of a
// score), both within the stopping rule. (The 7 are now 5 on changes
// between 2 full ones: the scores moved by 3.9e-15 in L1.)
//
// Smaller graphs iterate in float64 throughout: their shares fit the
// caches either way. A variable so that tests can take the float32 path
// on small graphs.
var float32MinNodes = 1 << 20

// float32Until: see float32MinNodes.
const float32Until = 1e-5

// float32View is the first half of s's memory as len(s) float32s.
func float32View(s []float64) []float32 {
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
}

// share is the type of the shares PageRank gathers: float64, or float32 in
// the first iterations of a large graph (see float32MinNodes).
type share interface{ float32 | float64 }

// iterateChunk computes the new scores of nodes lo..hi-1 (in place in x)
// and returns the chunk's L1 change and its new dangling mass. This loop
// is where PageRank spends its time, nearly all of it waiting on the
// random reads of contrib.
//
// It reads the shares of all the chunk's in-edges into scratch (a
// worker's own, gatherChunks*chunkCost long) in one flat loop first, then
// sums each node's from there. Summing straight from contrib, a loop per
// node, took 15% longer an iteration at L (293 against 255 ms): with ten
// in-edges a node on average, the branch that ends each node's loop was
// often mispredicted, and every misprediction threw away the reads issued
// after it, so fewer cache misses overlapped. The flat loop's one branch
// is predicted, so its reads overlap as far as the core allows, and the
// sums then read L2. A chunk with more in-edges than scratch holds (one
// node with many) is summed a node at a time, each node's shares gathered
// a scratch-full at a time (sumLarge).
//
// Every node's sum uses four accumulators in a fixed order (addShares: to
// hide the latency of floating-point adds), the same whichever way its
// shares are read, so results are the same bit for bit.
//
// contrib holds shares or, st.fromChanges, their changes (base is then
// the change of the teleport and dangling part); nextContrib gets shares
// or, st.toChanges, their changes (see changeIterations).
func iterateChunk[S, N share](g *CSR, lo, hi uint32, base, d float64, x []float64, contrib []S, nextContrib []N, scratch []S, st step) (diff, dang float64) {
	srcs := g.Sources
	od := g.OutDegree
	from, end := g.offsets.start(lo), g.offsets.start(hi)
	// A node's end, relative to the chunk's start, is the difference of
	// the low bits of their offsets (mod 2^offsets.bits) as long as the
	// chunk has fewer edges than that: always, at 32 bits, but tests lower
	// the bits. The steps of a graph above 2³² edges are then not looked
	// up at all.
	mask := uint32(uint64(1)<<g.offsets.bits - 1)
	if n := end - from; n > uint64(len(scratch)) || n > uint64(mask) {
		for v := lo; v < hi; v++ {
			to := g.offsets.start(v + 1)
			change, dangling := settle(v, base+d*sumLarge(contrib, srcs[from:to], scratch), x, nextContrib, od[v], st)
			diff += change
			dang += dangling
			from = to
		}
		return diff, dang
	}
	shares := scratch[:end-from]
	gatherShares(shares, contrib, srcs[from:end])
	low := g.offsets.low
	first := low[lo]
	at := uint32(0)
	for v := lo; v < hi; v++ {
		to := (low[v+1] - first) & mask
		in := shares[at:to]
		at = to
		s0, s1, s2, s3 := addShares(0, 0, 0, 0, in)
		change, dangling := settle(v, base+d*((s0+s1)+(s2+s3)), x, nextContrib, od[v], st)
		diff += change
		dang += dangling
	}
	return diff, dang
}

// step says what an iteration's contrib holds and what its nextContrib
// gets: shares, or the changes of the shares since the iteration before
// (see changeIterations).
type step struct {
	fromChanges bool // a node's score moves by base + d·(its sum of changes)
	toChanges   bool // nextContrib gets the change of each share
}

// settle makes node v's new score sum (plus its old score, if its sum is
// of changes), sets what it gives its targets next (its share, or the
// change of its share, over its outDegree targets; 0 if dangling), and
// returns the change from its old score and, for a dangling node, its new
// score (the mass it spreads over all). Small enough to be inlined.
func settle[N share](v uint32, sum float64, x []float64, nextContrib []N, outDegree uint32, st step) (change, dangling float64) {
	old, xv := x[v], sum
	if st.fromChanges {
		xv += old
	}
	x[v] = xv
	give := xv
	if st.toChanges {
		give = xv - old
	}
	if outDegree != 0 {
		nextContrib[v] = N(give * (1 / float64(outDegree)))
	} else {
		nextContrib[v], dangling = 0, xv
	}
	return math.Abs(xv - old), dangling
}

// changeIterations: on a large graph, after the float32 iterations (see
// float32MinNodes), PageRank iterates on changes, as the float32 ones cost
// less (an iteration at L: 265 to 305 ms against 315 to 440, in the
// same runs). Power iteration is x' = F(x) = c(x) + d·A·s(x), with s the
// shares (x/outdegree) and c the teleport and dangling part, linear in x.
// So from x_k = F(x_{k-1}),
//
//	x_{k+1} = x_k + (c(x_k) - c(x_{k-1})) + d·A·(s_k - s_{k-1}),
//
// and the changes s_k - s_{k-1} can be gathered in float32: their rounding
// puts an error of at most 2⁻²⁴ of the change of an iteration into the
// next one, in L1, where float32 shares put 2⁻²⁴ of the scores (5e-8).
// Unlike a power iteration this does not wash such errors out, so they
// add up, to at most 2⁻²⁴·d times the sum of the changes from then on:
// about 7e-13 from a change of 1e-5 at a rate of 0.3, 3e-12 at 0.85.
//
// So that the stopping rule, and its bound on the error, hold as for the
// plain iteration, PageRank stops only on a full iteration (float64
// shares in, changes out): the first after the float32 ones, after an
// extrapolation, and the one whose change is expected to be below the
// tolerance (a change-iteration's change times its ratio to the one
// before). Each full iteration starts the changes again from exact
// scores. On graphgen's L graph: 11 float32 iterations, one full, 5
// changes and a full one, 18 in all, as in float64 throughout.

// gatherShares sets shares[i] to contrib[sources[i]] (len(shares) ==
// len(sources)). It reads contrib without Go's bounds check: with the
// check (a compare and a branch an edge) an iteration at L took 11%
// longer (241 against 214 ms), as fewer reads fit the core's window at
// once. Safe because PageRank checked first that every source is below
// N (checkSources), and contrib has N entries.
func gatherShares[T share](shares, contrib []T, sources []uint32) {
	shares = shares[:len(sources)]
	base := unsafe.Pointer(unsafe.SliceData(contrib))
	size := unsafe.Sizeof(T(0))
	for i, u := range sources {
		shares[i] = *(*T)(unsafe.Add(base, uintptr(u)*size))
	}
}

// sumLarge is the sum of contrib over sources, the shares gathered into
// scratch a scratch-full at a time (a multiple of 4, so that each share
// goes to the accumulator it goes to when summed at once) and added up as
// iterateChunk adds.
func sumLarge[T share](contrib []T, sources []uint32, scratch []T) float64 {
	block := len(scratch) &^ 3
	if block == 0 {
		return sumShares(contrib, sources)
	}
	var s0, s1, s2, s3 float64
	for len(sources) > 0 {
		shares := scratch[:min(block, len(sources))]
		gatherShares(shares, contrib, sources[:len(shares)])
		sources = sources[len(shares):]
		// Every block but the last is a multiple of 4 long: the tail
		// goes to s0 in the last block only, as in one sum of all.
		s0, s1, s2, s3 = addShares(s0, s1, s2, s3, shares)
	}
	return (s0 + s1) + (s2 + s3)
}

// addShares adds shares to the four accumulators in turn (share i to
// s(i mod 4)), the rest after the last four to s0: the one order in which
// PageRank adds up a node's shares, whichever way they were read. Small
// enough to be inlined, so the accumulators stay in registers.
func addShares[T share](s0, s1, s2, s3 float64, shares []T) (float64, float64, float64, float64) {
	for len(shares) >= 4 {
		s0 += float64(shares[0])
		s1 += float64(shares[1])
		s2 += float64(shares[2])
		s3 += float64(shares[3])
		shares = shares[4:]
	}
	for _, c := range shares {
		s0 += float64(c)
	}
	return s0, s1, s2, s3
}

// sumShares is sumLarge without scratch (tests make every chunk go this
// way, gatherChunks 0, to check the other ways against it).
func sumShares[T share](contrib []T, in []uint32) float64 {
	var s0, s1, s2, s3 float64
	for len(in) >= 4 {
		s0 += float64(contrib[in[0]])
		s1 += float64(contrib[in[1]])
		s2 += float64(contrib[in[2]])
		s3 += float64(contrib[in[3]])
		in = in[4:]
	}
	for _, u := range in {
		s0 += float64(contrib[u])
	}
	return (s0 + s1) + (s2 + s3)
}

// sumScores is the sum of x, added up by chunk (partial sums in sums, one
// a chunk) and then in chunk order.
func sumScores(x []float64, bounds []uint32, sums []float64, workers int) float64 {
	forChunks(len(bounds)-1, workers, func(c int) {
		s := 0.0
		for v := bounds[c]; v < bounds[c+1]; v++ {
			s += x[v]
		}
		sums[c] = s
	})
	return sumInOrder(sums)
}

func sumInOrder(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
