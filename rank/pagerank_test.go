package rank

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// graph builds a CSR from an edge list, failing the test on error.
func graph(t testing.TB, n uint32, edges [][2]uint32) *CSR {
	t.Helper()
	src := make([]uint32, len(edges))
	dst := make([]uint32, len(edges))
	for i, e := range edges {
		src[i], dst[i] = e[0], e[1]
	}
	g, err := BuildCSR(n, src, dst, 1)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// exact is the tight tolerance for hand-computed graphs.
var exact = Params{Tolerance: 1e-15, MaxIterations: 10000, Workers: 1}

func TestPageRankHandComputed(t *testing.T) {
	tests := []struct {
		name  string
		n     uint32
		edges [][2]uint32
		want  []float64
	}{
		{"no edges: uniform", 4, nil, []float64{0.25, 0.25, 0.25, 0.25}},
		{"two-cycle", 2, [][2]uint32{{0, 1}, {1, 0}}, []float64{0.5, 0.5}},
		{"three-cycle", 3, [][2]uint32{{0, 1}, {1, 2}, {2, 0}}, []float64{1. / 3, 1. / 3, 1. / 3}},
		// a→b, b dangling: x_a = 0.075 + 0.425 x_b, x_a + x_b = 1, so
		// x_a = 0.5/1.425 = 20/57.
		{"one edge", 2, [][2]uint32{{0, 1}}, []float64{20. / 57, 37. / 57}},
		// Three leaves link a dangling centre: x_l = 0.0375 + 0.2125 x_c,
		// 3 x_l + x_c = 1, so x_l = 0.25/1.6375 = 40/262.
		{"star into a dangling centre", 4, [][2]uint32{{1, 0}, {2, 0}, {3, 0}},
			[]float64{1 - 120./262, 40. / 262, 40. / 262, 40. / 262}},
		// Self-loops and duplicates do not count: the same as "one edge".
		{"self-loops and duplicates dropped", 2, [][2]uint32{{0, 1}, {0, 1}, {1, 1}, {0, 0}}, []float64{20. / 57, 37. / 57}},
		// Centre links out to 3 dangling leaves: x_c = 0.0375 + 0.2125·3 x_l
		// and x_l = 0.0375 + 0.2125·2 x_l + (0.2125 + 0.85/3) x_c ... solved
		// with sum 1 below by the linear solver, cross-checked here by value.
		{"fan out of a centre", 4, [][2]uint32{{0, 1}, {0, 2}, {0, 3}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := graph(t, tc.n, tc.edges)
			res, err := PageRank(context.Background(), g, exact)
			if err != nil {
				t.Fatal(err)
			}
			want := tc.want
			if want == nil {
				want = solveDense(g, 0.85)
			}
			for v, w := range want {
				if math.Abs(res.Scores[v]-w) > 1e-12 {
					t.Errorf("score[%d] = %.15f, want %.15f", v, res.Scores[v], w)
				}
			}
			checkSumsToOne(t, res.Scores)
		})
	}
}

// TestPageRankDenseSolve checks small random graphs against the exact
// solution of the linear system (I - d M) x = (1-d)/n, M including the
// uniform spread of dangling nodes, solved by Gaussian elimination.
func TestPageRankDenseSolve(t *testing.T) {
	t.Run("float64", testPageRankDenseSolve)
	t.Run("float32 first", func(t *testing.T) {
		defer func(v int) { float32MinNodes = v }(float32MinNodes)
		float32MinNodes = 0
		testPageRankDenseSolve(t)
	})
}

// testPageRankDenseSolve checks PageRank against solveDense: to 1e-12 when
// iterated to 1e-15 (the float32 iterations, when taken, leave no trace),
// within the stopping rule's bound with DESIGN.md's parameters.
func testPageRankDenseSolve(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		n := uint32(5 + trial%6)
		var edges [][2]uint32
		for range r.IntN(int(n * 3)) {
			edges = append(edges, [2]uint32{r.Uint32N(n), r.Uint32N(n)})
		}
		g := graph(t, n, edges)
		res, err := PageRank(context.Background(), g, exact)
		if err != nil {
			t.Fatal(err)
		}
		want := solveDense(g, 0.85)
		for v := range want {
			if math.Abs(res.Scores[v]-want[v]) > 1e-12 {
				t.Fatalf("trial %d %v: score[%d] = %.15f, want %.15f", trial, edges, v, res.Scores[v], want[v])
			}
		}
		// With DESIGN.md's parameters the answer is within what a 1e-9
		// stopping rule allows: error <= residual·d/(1-d).
		res, err = PageRank(context.Background(), g, DefaultParams)
		if err != nil {
			t.Fatal(err)
		}
		// Some graphs (cycles of even length) converge slowly and stop at
		// 100 iterations; then the error is bounded by the residual.
		bound := 1e-8
		if res.Residual >= 1e-9 {
			if res.Iterations != 100 {
				t.Fatalf("stopped early without converging: %+v", res)
			}
			bound = res.Residual * 0.85 / 0.15 * 1.01
		}
		l1 := 0.0
		for v := range want {
			l1 += math.Abs(res.Scores[v] - want[v])
		}
		if l1 > bound {
			t.Fatalf("trial %d: L1 error %g, residual %g", trial, l1, res.Residual)
		}
	}
}

// solveDense solves x = (1-d)/n + d (A^T D^-1 x + dangling(x)/n) with
// sum(x) = 1 by Gaussian elimination with partial pivoting.
func solveDense(g *CSR, d float64) []float64 {
	n := int(g.N)
	// a x = b with a = I - d P^T where P is row-stochastic.
	a := make([][]float64, n)
	for i := range a {
		a[i] = make([]float64, n+1)
		a[i][i] = 1
		a[i][n] = (1 - d) / float64(n)
	}
	for u := range n {
		if g.OutDegree[u] == 0 {
			for v := range n {
				a[v][u] -= d / float64(n)
			}
		}
	}
	for v := range g.N {
		for _, u := range g.In(v) {
			a[v][u] -= d / float64(g.OutDegree[u])
		}
	}
	for col := range n {
		p := col
		for r := col + 1; r < n; r++ {
			if math.Abs(a[r][col]) > math.Abs(a[p][col]) {
				p = r
			}
		}
		a[col], a[p] = a[p], a[col]
		for r := range n {
			if r == col || a[r][col] == 0 {
				continue
			}
			f := a[r][col] / a[col][col]
			for c := col; c <= n; c++ {
				a[r][c] -= f * a[col][c]
			}
		}
	}
	x := make([]float64, n)
	sum := 0.0
	for i := range n {
		x[i] = a[i][n] / a[i][i]
		sum += x[i]
	}
	for i := range x {
		x[i] /= sum
	}
	return x
}

func checkSumsToOne(t *testing.T, scores []float64) {
	t.Helper()
	sum := 0.0
	for _, s := range scores {
		sum += s
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Errorf("scores sum to %.17g", sum)
	}
}

// randomEdges makes m random edges over n nodes with a skew towards low
// targets (some popular nodes) and some repeats and self-loops.
func randomEdges(seed uint64, n uint32, m int) (src, dst []uint32) {
	r := rand.New(rand.NewPCG(seed, 99))
	src = make([]uint32, m)
	dst = make([]uint32, m)
	for i := range m {
		src[i] = r.Uint32N(n)
		if r.IntN(3) == 0 {
			dst[i] = uint32(float64(n) * math.Pow(r.Float64(), 4))
		} else {
			dst[i] = r.Uint32N(n)
		}
	}
	return src, dst
}

// TestPageRankIndependent compares PageRank on a random graph of 10,000
// nodes with a plain power iteration written from the definition over a
// map of edges.
func TestPageRankIndependent(t *testing.T) {
	const n = 10_000
	src, dst := randomEdges(7, n, 60_000)
	// Leave a third of the nodes dangling.
	for i := range src {
		if src[i]%3 == 0 {
			src[i] = (src[i] + 1) % n
		}
	}
	g, err := BuildCSR(n, src, dst, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := PageRank(context.Background(), g, DefaultParams)
	if err != nil {
		t.Fatal(err)
	}

	// The reference: edges as a set, out-degree by counting, push-style.
	type edge struct{ u, v uint32 }
	set := map[edge]bool{}
	out := make([]int, n)
	for i := range src {
		e := edge{src[i], dst[i]}
		if e.u != e.v && !set[e] {
			set[e] = true
			out[e.u]++
		}
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = 1.0 / n
	}
	iters := 0
	for iters < 100 {
		dangling := 0.0
		for u := range n {
			if out[u] == 0 {
				dangling += x[u]
			}
		}
		next := make([]float64, n)
		for i := range next {
			next[i] = 0.15/n + 0.85*dangling/n
		}
		for e := range set {
			next[e.v] += 0.85 * x[e.u] / float64(out[e.u])
		}
		change := 0.0
		for i := range x {
			change += math.Abs(next[i] - x[i])
		}
		x = next
		iters++
		if change < 1e-9 {
			break
		}
	}
	if res.Iterations != iters {
		t.Errorf("iterations %d, reference %d", res.Iterations, iters)
	}
	for v := range x {
		if math.Abs(res.Scores[v]-x[v]) > 1e-9 {
			t.Fatalf("score[%d] = %g, reference %g", v, res.Scores[v], x[v])
		}
	}
	checkSumsToOne(t, res.Scores)
}

// TestPageRankWorkers: bit-identical scores for any number of workers.
func TestPageRankWorkers(t *testing.T) {
	for _, narrow := range []bool{false, true} {
		t.Run(fmt.Sprintf("float32 %v", narrow), func(t *testing.T) {
			defer func(v int) { float32MinNodes = v }(float32MinNodes)
			if narrow {
				float32MinNodes = 0
			}
			testPageRankWorkers(t, narrow)
		})
	}
}

func testPageRankWorkers(t *testing.T, narrow bool) {
	src, dst := randomEdges(3, 100_000, 400_000)
	var first Result
	for _, w := range []int{1, 2, 3, 8} {
		g, err := BuildCSR(100_000, src, dst, w)
		if err != nil {
			t.Fatal(err)
		}
		if w == 1 && len(g.chunks()) < 10 {
			t.Fatalf("only %d chunks: the test would not exercise parallel sums", len(g.chunks()))
		}
		p := DefaultParams
		p.Workers = w
		res, err := PageRank(context.Background(), g, p)
		if err != nil {
			t.Fatal(err)
		}
		if (res.Float32Iterations > 0) != narrow {
			t.Fatalf("workers %d: %d of %d iterations in float32", w, res.Float32Iterations, res.Iterations)
		}
		if w == 1 {
			first = res
			continue
		}
		if res.Iterations != first.Iterations || res.Residual != first.Residual || res.Float32Iterations != first.Float32Iterations {
			t.Errorf("workers %d: %d iterations, residual %g; workers 1: %d, %g", w, res.Iterations, res.Residual, first.Iterations, first.Residual)
		}
		for v := range res.Scores {
			if math.Float64bits(res.Scores[v]) != math.Float64bits(first.Scores[v]) {
				t.Fatalf("workers %d: score[%d] = %v, workers 1: %v", w, v, res.Scores[v], first.Scores[v])
			}
		}
	}
}

func TestPageRankParams(t *testing.T) {
	g := graph(t, 3, [][2]uint32{{0, 1}})
	for _, p := range []Params{{Damping: 1}, {Damping: -0.5}, {Tolerance: -1}, {MaxIterations: -1}, {Damping: math.NaN()}} {
		if _, err := PageRank(context.Background(), g, p); err == nil {
			t.Errorf("%+v: no error", p)
		}
	}
	res, err := PageRank(context.Background(), g, Params{MaxIterations: 2})
	if err != nil || res.Iterations != 2 {
		t.Errorf("MaxIterations 2: %+v, %v", res, err)
	}
	empty := graph(t, 0, nil)
	res, err = PageRank(context.Background(), empty, DefaultParams)
	if err != nil || len(res.Scores) != 0 {
		t.Errorf("empty graph: %+v, %v", res, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PageRank(ctx, g, DefaultParams); err == nil {
		t.Error("cancelled context: no error")
	}
}

// TestGatheredAndDirectSumsAgree: iterateChunk's two ways of summing a
// chunk (gathering the shares into scratch first, or reading them
// straight from contrib) give the same scores bit for bit, with small
// chunks so that a graph takes both, and with the offsets' bits lowered
// so that the gathering way's chunks cross the points where the low bits
// wrap around (the path of graphs of more than 2³² edges).
func TestGatheredAndDirectSumsAgree(t *testing.T) {
	defer func(c, g int, b uint8) { chunkCost, gatherChunks, offsetBits = c, g, b }(chunkCost, gatherChunks, offsetBits)
	src, dst := randomEdges(11, 2000, 30_000)
	for _, tc := range []struct {
		cost int
		bits uint8
	}{{1 << 15, 32}, {64, 32}, {64, 7}, {300, 9}} {
		chunkCost, offsetBits = tc.cost, tc.bits
		g, err := BuildCSR(2000, src, dst, 2)
		if err != nil {
			t.Fatal(err)
		}
		if tc.bits < 32 && len(g.offsets.steps) == 0 {
			t.Fatalf("offsetBits %d: no steps", tc.bits)
		}
		gatherChunks = 0
		direct, err := PageRank(context.Background(), g, Params{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		gatherChunks = 2
		gathered, err := PageRank(context.Background(), g, Params{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(direct.Scores, gathered.Scores) || direct.Iterations != gathered.Iterations {
			t.Errorf("chunk cost %d, offset bits %d: gathered sums give other scores than direct ones", tc.cost, tc.bits)
		}
	}
}

// PageRank refuses a graph whose sources name no node (the in-edge sums
// read the scores without bounds checks, so this must be caught first),
// wherever the bad source is, and ranks it again once it is mended.
func TestPageRankRefusesSourceOutsideGraph(t *testing.T) {
	defer func(v int) { parallelMinEdges = v }(parallelMinEdges)
	parallelMinEdges = 100
	src, dst := randomEdges(3, 500, 5000)
	g, err := BuildCSR(500, src, dst, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, len(g.Sources) / 2, len(g.Sources) - 1} {
		was := g.Sources[i]
		for _, bad := range []uint32{500, math.MaxUint32} {
			g.Sources[i] = bad
			_, err := PageRank(context.Background(), g, Params{Workers: 2})
			if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("source %d of in-edge %d is not a node", bad, i)) {
				t.Errorf("source %d at in-edge %d: err %v", bad, i, err)
			}
		}
		g.Sources[i] = was
	}
	if _, err := PageRank(context.Background(), g, Params{Workers: 2}); err != nil {
		t.Errorf("mended: %v", err)
	}
}

// TestFloat32IterationsAgree: on a graph of 200,000 nodes, PageRank with its
// first iterations in float32 (float32MinNodes lowered) takes some
// iterations that way, then iterations on changes between full float64
// ones, and ends within the stopping rule's bound of the float64-only
// scores, in about as many iterations; tolerances below float32's reach
// (1e-13) and above float32Until (1e-3) are met too, ending on a full
// iteration.
func TestFloat32IterationsAgree(t *testing.T) {
	defer func(v int) { float32MinNodes = v }(float32MinNodes)
	const n = 200_000
	src, dst := randomEdges(5, n, 1_500_000)
	g, err := BuildCSR(n, src, dst, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, tol := range []float64{1e-9, 1e-13, 1e-3} {
		p := Params{Tolerance: tol, Workers: 2}
		float32MinNodes = n + 1
		wide, err := PageRank(context.Background(), g, p)
		if err != nil {
			t.Fatal(err)
		}
		float32MinNodes = n
		mixed, err := PageRank(context.Background(), g, p)
		if err != nil {
			t.Fatal(err)
		}
		if wide.Float32Iterations != 0 || mixed.Float32Iterations == 0 || mixed.Float32Iterations >= mixed.Iterations {
			t.Fatalf("tolerance %g: float32 iterations %d of %d, and %d of %d with float32MinNodes above N", tol,
				mixed.Float32Iterations, mixed.Iterations, wide.Float32Iterations, wide.Iterations)
		}
		// The iterations after the float32 ones gather changes, but for
		// the first and the last (full ones).
		if wide.ChangeIterations != 0 || mixed.ChangeIterations == 0 ||
			mixed.Float32Iterations+mixed.ChangeIterations > mixed.Iterations-2 {
			t.Fatalf("tolerance %g: %d float32 iterations and %d of changes of %d, and %d of changes with float32MinNodes above N", tol,
				mixed.Float32Iterations, mixed.ChangeIterations, mixed.Iterations, wide.ChangeIterations)
		}
		// The last iteration was a full one: one more plain float64
		// iteration from the scores changes them by less than the
		// tolerance, as the one before the result did.
		for _, res := range []Result{mixed, wide} {
			if c := nextChange(g, res.Scores, 0.85); c >= tol {
				t.Errorf("tolerance %g: one more iteration changes the scores by %g", tol, c)
			}
		}
		if mixed.Residual >= tol || wide.Residual >= tol {
			t.Fatalf("tolerance %g: residuals %g (mixed) and %g (float64)", tol, mixed.Residual, wide.Residual)
		}
		if d := mixed.Iterations - wide.Iterations; d < -1 || d > 1 {
			t.Errorf("tolerance %g: %d iterations, %d in float64 only", tol, mixed.Iterations, wide.Iterations)
		}
		// Each is within residual·d/(1-d) of the true scores in L1.
		bound := (mixed.Residual + wide.Residual) * 0.85 / 0.15 * 1.01
		l1 := 0.0
		for v := range mixed.Scores {
			l1 += math.Abs(mixed.Scores[v] - wide.Scores[v])
		}
		if l1 > bound {
			t.Errorf("tolerance %g: L1 difference %g, bound %g", tol, l1, bound)
		}
		checkSumsToOne(t, mixed.Scores)
	}
}

// nextChange is the L1 change of one plain power iteration, in float64,
// from the scores x (summing to 1).
func nextChange(g *CSR, x []float64, d float64) float64 {
	n := float64(g.N)
	dangling := 0.0
	for v, o := range g.OutDegree {
		if o == 0 {
			dangling += x[v]
		}
	}
	change := 0.0
	for v := range g.N {
		sum := 0.0
		for _, u := range g.In(v) {
			sum += x[u] / float64(g.OutDegree[u])
		}
		change += math.Abs((1-d)/n + d*dangling/n + d*sum - x[v])
	}
	return change
}

// TestPageRankProgress: Params.Progress hears of every iteration, in
// order, the last with the result's change and extrapolations; LogProgress
// logs them all at 0 and none within its interval.
func TestPageRankProgress(t *testing.T) {
	g := sinkGraph(t, 3000, 100, 2, 3)
	var seen []Progress
	p := Params{Workers: 2, Progress: func(pr Progress) { seen = append(seen, pr) }}
	res, err := PageRank(context.Background(), g, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != res.Iterations || res.Extrapolations == 0 {
		t.Fatalf("%d progress calls, %d iterations (%d extrapolations)", len(seen), res.Iterations, res.Extrapolations)
	}
	for i, pr := range seen {
		if pr.Iteration != i+1 || pr.Tolerance != DefaultParams.Tolerance {
			t.Fatalf("call %d: %+v", i, pr)
		}
	}
	if last := seen[len(seen)-1]; last.Change != res.Residual || last.Extrapolations != res.Extrapolations {
		t.Errorf("last call %+v, result: residual %g, %d extrapolations", last, res.Residual, res.Extrapolations)
	}
	for _, tc := range []struct {
		every time.Duration
		lines int
	}{{0, res.Iterations}, {time.Hour, 0}} {
		var logs bytes.Buffer
		p.Progress = LogProgress(slog.New(slog.NewTextHandler(&logs, nil)), tc.every)
		if _, err := PageRank(context.Background(), g, p); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(logs.String(), `msg="pagerank iteration"`); n != tc.lines {
			t.Errorf("every %v: %d lines, want %d:\n%s", tc.every, n, tc.lines, logs.String())
		}
	}
}
