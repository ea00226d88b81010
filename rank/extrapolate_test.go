package rank

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
)

// sinkGraph is a random graph of n nodes (randomEdges, a third of them
// dangling) with count closed cycles added among its dangling nodes, of
// the lengths given in turn: rank sinks, which make the power iteration
// converge at a rate near d, as the web's groups of domains that link only
// among themselves do.
func sinkGraph(t testing.TB, n uint32, count int, lengths ...int) *CSR {
	t.Helper()
	src, dst := randomEdges(11, n, 6*int(n))
	for i := range src {
		if src[i]%3 == 0 {
			src[i] = (src[i] + 1) % n
		}
	}
	next := uint32(0) // the next dangling node: a multiple of 3
	for c := range count {
		l := uint32(lengths[c%len(lengths)])
		if next+3*l > n {
			t.Fatalf("%d nodes hold fewer than %d cycles", n, count)
		}
		for j := range l {
			src = append(src, next+3*j)
			dst = append(dst, next+3*((j+1)%l))
		}
		next += 3 * l
	}
	g, err := BuildCSR(n, src, dst, 2)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// plainPageRank is PageRank without extrapolation.
func plainPageRank(t testing.TB, g *CSR, p Params) Result {
	t.Helper()
	defer func(s []int) { extrapolationSpans = s }(extrapolationSpans)
	extrapolationSpans = nil
	res, err := PageRank(context.Background(), g, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Extrapolations != 0 {
		t.Fatalf("%d extrapolations with none allowed", res.Extrapolations)
	}
	return res
}

// TestExtrapolation: on graphs with rank sinks, PageRank extrapolates and
// meets the stopping rule in fewer iterations than the plain power
// iteration, within the rule's bound of the true scores (the plain
// iteration run to 1e-15), the same for any number of workers and with
// float32 shares first; where no span helps (cycles of 4 and 5) it gives
// up after one lost iteration a span.
func TestExtrapolation(t *testing.T) {
	defer func(v int) { float32MinNodes = v }(float32MinNodes)
	const n = 30_000
	tests := []struct {
		lengths []int
		// most is the most iterations allowed, as a share of the plain
		// iteration's; lost, the iterations lost to extrapolations that
		// did not help.
		most float64
		lost int
	}{
		{[]int{2}, 0.6, 0},
		{[]int{3}, 0.8, 0},
		{[]int{2, 3}, 0.8, 0},
		{[]int{4, 5}, 0, len(extrapolationSpans)},
	}
	for _, tc := range tests {
		for _, narrow := range []bool{false, true} {
			t.Run(fmt.Sprintf("cycles %v float32 %v", tc.lengths, narrow), func(t *testing.T) {
				float32MinNodes = 1 << 20
				if narrow {
					float32MinNodes = 0
				}
				g := sinkGraph(t, n, 1000, tc.lengths...)
				p := Params{MaxIterations: 1000, Workers: 2}
				plain := plainPageRank(t, g, p)
				truth := plainPageRank(t, g, Params{Tolerance: 1e-15, MaxIterations: 10000, Workers: 2})
				res, err := PageRank(context.Background(), g, p)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("plain: %d iterations; extrapolated: %d iterations, %d extrapolations", plain.Iterations, res.Iterations, res.Extrapolations)
				if plain.Iterations < 60 {
					t.Fatalf("the plain iteration took %d iterations: the sinks did not slow it down", plain.Iterations)
				}
				if res.Residual >= 1e-9 {
					t.Fatalf("residual %g after %d iterations", res.Residual, res.Iterations)
				}
				if tc.lost > 0 {
					if res.Extrapolations != 0 || res.Iterations != plain.Iterations+tc.lost {
						t.Fatalf("%d iterations and %d extrapolations kept, want %d and none", res.Iterations, res.Extrapolations, plain.Iterations+tc.lost)
					}
				} else if res.Extrapolations == 0 || float64(res.Iterations) > tc.most*float64(plain.Iterations) {
					t.Fatalf("%d iterations (%d extrapolations), want at most %.0f%% of the plain iteration's %d",
						res.Iterations, res.Extrapolations, 100*tc.most, plain.Iterations)
				}
				// The stopping rule's bound holds whatever vector the last
				// plain iteration started from: error <= residual·d/(1-d).
				l1 := 0.0
				for v := range truth.Scores {
					l1 += math.Abs(res.Scores[v] - truth.Scores[v])
				}
				if bound := res.Residual*0.85/0.15 + 1e-12; l1 > bound {
					t.Errorf("L1 error %g, bound %g", l1, bound)
				}
				checkSumsToOne(t, res.Scores)
				for _, w := range []int{1, 3, 8} {
					again, err := PageRank(context.Background(), g, Params{MaxIterations: 1000, Workers: w})
					if err != nil {
						t.Fatal(err)
					}
					if again.Iterations != res.Iterations || again.Extrapolations != res.Extrapolations || !slices.Equal(again.Scores, res.Scores) {
						t.Fatalf("workers %d: %d iterations, %d extrapolations, scores equal %v; workers 2: %d, %d",
							w, again.Iterations, again.Extrapolations, slices.Equal(again.Scores, res.Scores), res.Iterations, res.Extrapolations)
					}
				}
			})
		}
	}
}

// TestNoExtrapolationOnFastGraphs: a graph whose iteration converges
// quickly (graphgen's kind: changes shrink by a third or so) never starts
// extrapolating, so its scores are those of the plain iteration bit for
// bit.
func TestNoExtrapolationOnFastGraphs(t *testing.T) {
	src, dst := randomEdges(3, 50_000, 400_000)
	g, err := BuildCSR(50_000, src, dst, 2)
	if err != nil {
		t.Fatal(err)
	}
	plain := plainPageRank(t, g, DefaultParams)
	res, err := PageRank(context.Background(), g, DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	if res.Extrapolations != 0 || res.Iterations != plain.Iterations || !slices.Equal(res.Scores, plain.Scores) {
		t.Fatalf("%d extrapolations, %d iterations (plain %d), scores equal %v", res.Extrapolations, res.Iterations, plain.Iterations, slices.Equal(res.Scores, plain.Scores))
	}
}

// TestExtrapolatorDecisions drives the extrapolator with made-up changes
// (x is one node, whose value is what is extrapolated): it arms after three
// steady ratios of at least minExtrapolationRate, extrapolates a span
// later with the ratio measured over the span, keeps an extrapolation the
// next iteration improves on (and arms again at once), and goes back to
// the scores before one that did not, then tries the next span from them,
// then stops for good.
func TestExtrapolatorDecisions(t *testing.T) {
	one := []uint32{0, 1}
	type step struct {
		change  float64
		x       float64 // x after the iteration
		changed bool    // after reports that it changed x
		want    float64 // x after after
		state   extrapolationState
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"fast: never", []step{
			{1, 1, false, 1, watching}, {0.3, 1, false, 1, watching}, {0.09, 1, false, 1, watching}, {0.027, 1, false, 1, watching},
		}},
		{"slow but unsteady: never", []step{
			{1, 1, false, 1, watching}, {0.5, 1, false, 1, watching}, {0.4, 1, false, 1, watching}, {0.2, 1, false, 1, watching}, {0.18, 1, false, 1, watching},
		}},
		{"slow and steady: extrapolate, keep, arm again", []step{
			{1, 1, false, 1, watching}, {0.8, 1, false, 1, watching}, {0.64, 1, false, 1, watching},
			{0.512, 2, false, 2, armed}, // three steady ratios (0.8 thrice): hist = 2
			{0.4096, 2, false, 2, armed},
			// r^2 = 0.32768/0.512 = 0.64: (3 - 0.64·2)/0.36
			{0.32768, 3, true, (3 - 0.64*2) / 0.36, checking},
			{0.01, 5, false, 5, settling}, // ratio 0.03 < 0.8: kept; a span of 2 settles
			{0.008, 6, false, 6, armed},   // hist = 6
		}},
		{"an extrapolation that does not help is undone, then the next span, then off", []step{
			{1, 1, false, 1, watching}, {0.8, 1, false, 1, watching}, {0.64, 1, false, 1, watching},
			{0.512, 2, false, 2, armed}, {0.4096, 2, false, 2, armed},
			{0.32768, 3, true, (3 - 0.64*2) / 0.36, checking},
			// Worse: back to 3, the start of the next span (6), measured
			// from the change that led to 3.
			{0.5, 7, true, 3, armed},
			{0.262144, 3, false, 3, armed}, {0.2097152, 3, false, 3, armed}, {0.16777216, 3, false, 3, armed},
			{0.134217728, 3, false, 3, armed}, {0.1073741824, 3, false, 3, armed},
			// q = 0.08589934592/0.32768 = 0.8^6.
			{0.08589934592, 5, true, (5 - math.Pow(0.8, 6)*3) / (1 - math.Pow(0.8, 6)), checking},
			{0.08, 9, true, 5, off}, // ratio 0.93 >= 0.8: back to 5, and no span is left
			{0.064, 5, false, 5, off}, {0.0512, 5, false, 5, off}, {0.04096, 5, false, 5, off},
		}},
		{"a span of 6 kept arms again at once", []step{
			{1, 1, false, 1, watching}, {0.8, 1, false, 1, watching}, {0.64, 1, false, 1, watching},
			{0.512, 2, false, 2, armed}, {0.4096, 2, false, 2, armed},
			{0.32768, 3, true, (3 - 0.64*2) / 0.36, checking},
			{0.5, 7, true, 3, armed}, // worse: back to 3
			{0.262144, 3, false, 3, armed}, {0.2097152, 3, false, 3, armed}, {0.16777216, 3, false, 3, armed},
			{0.134217728, 3, false, 3, armed}, {0.1073741824, 3, false, 3, armed},
			{0.08589934592, 5, true, (5 - math.Pow(0.8, 6)*3) / (1 - math.Pow(0.8, 6)), checking},
			{0.005, 6, false, 6, armed}, // kept: hist = 6, change 0.005
			{0.004, 6, false, 6, armed}, {0.0032, 6, false, 6, armed}, {0.00256, 6, false, 6, armed},
			{0.002048, 6, false, 6, armed}, {0.0016384, 6, false, 6, armed},
			// Six iterations on: q = 0.8^6 again.
			{0.00131072, 7, true, (7 - math.Pow(0.8, 6)*6) / (1 - math.Pow(0.8, 6)), checking},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e extrapolator
			prev := 0.0
			for i, s := range tc.steps {
				x := []float64{s.x}
				changed := e.after(i+1, s.change, prev, x, one, 1)
				if changed != s.changed || math.Abs(x[0]-s.want) > 1e-12 || e.state != s.state {
					t.Fatalf("iteration %d (change %g): changed %v, x %g, state %d; want %v, %g, %d", i+1, s.change, changed, x[0], e.state, s.changed, s.want, s.state)
				}
				prev = s.change
			}
		})
	}
}

// TestExtrapolatorRestart: the switch from float32 shares (restart) makes
// a watching extrapolator count steady ratios from scratch, and leaves an
// armed one armed at the same iteration (its q is measured over the span).
func TestExtrapolatorRestart(t *testing.T) {
	one, x := []uint32{0, 1}, []float64{1}
	var e extrapolator
	prev := 0.0
	feed := func(it int, changes ...float64) {
		for i, c := range changes {
			e.after(it+i, c, prev, x, one, 1)
			prev = c
		}
	}
	feed(1, 1, 0.8, 0.64) // one steady ratio
	e.restart()
	feed(4, 0.512, 0.4096)
	if e.state != watching {
		t.Fatalf("state %d after a restart and two ratios, want watching", e.state)
	}
	feed(6, 0.32768) // three steady ratios since the restart
	if e.state != armed || e.at != 6 {
		t.Fatalf("state %d at %d, want armed at 6", e.state, e.at)
	}
	e.restart()
	if e.state != armed || e.at != 6 || e.atChange != 0.32768 {
		t.Fatalf("after a restart: state %d at %d (change %g), want armed at 6 (0.32768)", e.state, e.at, e.atChange)
	}
}
