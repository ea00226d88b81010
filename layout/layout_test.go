package layout

import (
	"context"
	"math"
	"testing"

	"github.com/mapthenet/mapthenet/graphgen"
)

// smallChunks cuts even the tests' small graphs into many chunks, so that
// several workers really share the work.
func smallChunks(t *testing.T) {
	old := chunkNodes
	chunkNodes = 64
	t.Cleanup(func() { chunkNodes = old })
}

// communityInput is a ranked graphgen graph with planted communities.
func communityInput(t *testing.T, domains int, edges int64, communities int) (MapInput, *graphgen.Generator) {
	t.Helper()
	return benchInput(t, graphgen.Config{Domains: domains, Edges: edges, Seed: 7, Communities: communities})
}

// TestCommunitiesApart: on a graph with planted communities (90% of links
// inside), a node is on average much closer to the centre of its own
// community than to the nearest centre of another.
func TestCommunitiesApart(t *testing.T) {
	const k = 4
	in, gen := communityInput(t, 1200, 9000, k)
	x, y, st, err := Map(context.Background(), in, Params{Iterations: 150})
	if err != nil {
		t.Fatal(err)
	}
	own, other, n := communityDistances(x, y, k, gen.Community)
	t.Logf("placed %d of %d; mean distance to own centre %.1f, to the nearest other %.1f (ratio %.2f); %+v", n, len(x), own, other, own/other, st)
	if own/other > 0.6 {
		t.Errorf("communities not apart: mean distance to own centre %.1f, to the nearest other %.1f", own, other)
	}
}

// withCommunities gives in the planted communities of gen.
func withCommunities(in MapInput, gen *graphgen.Generator) MapInput {
	in.Community = func(v uint32) int32 { return int32(gen.Community(v)) }
	return in
}

// TestCommunitiesTogether: a layout that knows the communities draws each
// as a region of its own, cold (one level or multilevel) and warm: most of
// a node's nearest nodes on the map are of its community. Planted
// communities with 60% of the links inside: ForceAtlas2 alone, or with
// community seeds but without Between, scores about 0.7 here (0.125 for
// a random placement).
func TestCommunitiesTogether(t *testing.T) {
	in, gen := benchInput(t, graphgen.Config{Domains: 3000, Edges: 24000, Seed: 7, Communities: 8, Intra: 0.6})
	comm := make([]int32, in.Graph.N)
	for v := range comm {
		comm[v] = int32(gen.Community(uint32(v)))
	}
	px, py, _, err := Map(context.Background(), in, Params{})
	if err != nil {
		t.Fatal(err)
	}
	in = withCommunities(in, gen)
	for _, c := range []struct {
		name string
		p    Params
	}{
		{"one level", Params{}},
		{"multilevel", Params{Budget: 60_000}}, // a single level would need 150 × ~3,750
	} {
		t.Run(c.name, func(t *testing.T) {
			x, y, st, err := Map(context.Background(), in, c.p)
			if err != nil {
				t.Fatal(err)
			}
			warm := in
			warm.Prev = func(v uint32) (float64, float64, bool) { return x[v], y[v], !math.IsNaN(x[v]) }
			wx, wy, wst, err := Map(context.Background(), warm, Params{Budget: c.p.Budget, WarmIterations: 20})
			if err != nil {
				t.Fatal(err)
			}
			cold, after := knnPurity(x, y, comm, 10), knnPurity(wx, wy, comm, 10)
			t.Logf("own community among the 10 nearest: %.3f cold (%d levels), %.3f warm (%d iterations); without communities %.3f",
				cold, st.Levels, after, wst.Iterations, knnPurity(px, py, comm, 10))
			if c.name == "multilevel" && st.Levels < 2 {
				t.Errorf("%d levels, want a multilevel layout", st.Levels)
			}
			if cold < 0.85 || after < 0.85 {
				t.Errorf("own community among the 10 nearest: %.3f cold, %.3f warm, want at least 0.85", cold, after)
			}
		})
	}
}

// TestSameForAnyWorkers: positions are bit-identical for any number of
// workers, cold and warm.
func TestSameForAnyWorkers(t *testing.T) {
	smallChunks(t)
	in, gen := communityInput(t, 800, 5000, 3)
	in = withCommunities(in, gen)
	in.Top = 500 // the rest placed beside them
	// The default budget: one level; a small one: a multilevel cold start
	// and a warm start cut short.
	for _, budget := range []int64{0, 20_000} {
		var first []float64
		for _, workers := range []int{1, 2, 5} {
			p := Params{Iterations: 40, WarmIterations: 10, Workers: workers, Budget: budget}
			x, y, cst, err := Map(context.Background(), in, p)
			if err != nil {
				t.Fatal(err)
			}
			if multi := cst.Levels > 1; multi != (budget > 0) {
				t.Fatalf("budget %d: %d levels", budget, cst.Levels)
			}
			warm := in
			warm.Prev = func(v uint32) (float64, float64, bool) { return x[v], y[v], !math.IsNaN(x[v]) }
			wx, wy, st, err := Map(context.Background(), warm, p)
			if err != nil {
				t.Fatal(err)
			}
			if !st.Warm || st.Reused {
				t.Fatalf("warm run: %+v", st)
			}
			all := append(append(append([]float64{}, x...), y...), append(wx, wy...)...)
			if first == nil {
				first = all
				continue
			}
			for i := range all {
				if math.Float64bits(all[i]) != math.Float64bits(first[i]) {
					t.Fatalf("budget %d, workers %d: value %d is %v, with 1 worker %v", budget, workers, i, all[i], first[i])
				}
			}
		}
	}
}

// TestStableAcrossRebuilds: a layout warm-started from the previous one
// after one new edge moves its nodes little; with no change at all it
// keeps every position exactly.
func TestStableAcrossRebuilds(t *testing.T) {
	gen, src, dst := generatedEdges(t, graphgen.Config{Domains: 1000, Edges: 6000, Seed: 3, Communities: 5})
	keys := make([]uint64, gen.Domains())
	for v := range keys {
		keys[v] = Key(gen.Name(uint32(v)))
	}
	in := withCommunities(rankedInput(t, src, dst, keys), gen)
	in.Top = 700
	p := Params{Iterations: 150, WarmIterations: 30}
	x0, y0, st0, err := Map(context.Background(), in, p)
	if err != nil {
		t.Fatal(err)
	}
	prev := func(v uint32) (float64, float64, bool) { return x0[v], y0[v], !math.IsNaN(x0[v]) }

	// Unchanged: the same positions, bit for bit.
	same := in
	same.Prev, same.PrevFingerprint = prev, st0.Fingerprint
	x1, y1, st1, err := Map(context.Background(), same, p)
	if err != nil {
		t.Fatal(err)
	}
	if !st1.Reused || st1.Fingerprint != st0.Fingerprint {
		t.Errorf("unchanged graph: %+v, want the previous positions reused", st1)
	}
	for v := range x0 {
		if math.Float64bits(x0[v]) != math.Float64bits(x1[v]) || math.Float64bits(y0[v]) != math.Float64bits(y1[v]) {
			t.Fatalf("unchanged graph: node %d moved from (%v, %v) to (%v, %v)", v, x0[v], y0[v], x1[v], y1[v])
		}
	}

	// One new edge between two laid-out nodes of different communities.
	a, b := in.Order[10], in.Order[11]
	for gen.Community(a) == gen.Community(b) {
		b++
	}
	changed := withCommunities(rankedInput(t, append(src, a), append(dst, b), keys), gen)
	changed.Top = in.Top
	changed.Prev, changed.PrevFingerprint = prev, st0.Fingerprint
	x2, y2, st2, err := Map(context.Background(), changed, p)
	if err != nil {
		t.Fatal(err)
	}
	if st2.Reused || !st2.Warm || st2.Fingerprint == st0.Fingerprint {
		t.Fatalf("one new edge: %+v", st2)
	}
	moved := meanDisplacement(x0, y0, x2, y2) / st0.MeanEdgeLength
	t.Logf("one new edge: mean displacement %.3f edge lengths (mean edge %.1f); %+v", moved, st0.MeanEdgeLength, st2.RunStats)
	if moved > 0.25 {
		t.Errorf("one new edge moved the nodes by %.3f mean edge lengths on average, want at most 0.25", moved)
	}

}
