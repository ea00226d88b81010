package layout

import (
	"context"
	"slices"
	"testing"

	"github.com/mapthenet/mapthenet/graphgen"
)

// generated is the undirected graph of a graphgen graph.
func generated(t *testing.T, domains int, edges int64) *Graph {
	t.Helper()
	_, a, b := generatedEdges(t, graphgen.Config{Domains: domains, Edges: edges, Seed: 5})
	g, err := FromEdges(domains, a, b)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestPlan: what fits the budget gets the full iterations in one level;
// a bigger cold start is multilevel, each level levelRatio times the one
// before, within the budget; a warm start is cut to what the budget pays.
func TestPlan(t *testing.T) {
	g := generated(t, 5000, 30_000)
	full := work(g.N(), g.NumEdges()) // 5000 + edges/32
	cases := []struct {
		name   string
		warm   bool
		p      Params
		levels int // 0: more than one
		last   int // iterations over the whole graph
	}{
		{"cold, fits", false, Params{Budget: 150 * full}, 1, 150},
		{"warm, fits", true, Params{Budget: 50 * full}, 1, 50},
		{"no bound", false, Params{Budget: -1, Iterations: 1000}, 1, 1000},
		{"warm, cut", true, Params{Budget: 7*full + 1}, 1, 7},
		{"warm, at least one", true, Params{Budget: 10}, 1, 1},
		{"cold, multilevel", false, Params{Budget: 30 * full}, 0, -1},
		{"cold, tight", false, Params{Budget: full}, 0, minRefine},
	}
	for _, c := range cases {
		p, err := c.p.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		levels := plan(g, c.warm, p)
		t.Logf("%s: %+v", c.name, levels)
		last := levels[len(levels)-1]
		if last.n != g.N() || last.edges != g.NumEdges() {
			t.Errorf("%s: last level %+v, want the whole graph (%d nodes, %d edges)", c.name, last, g.N(), g.NumEdges())
		}
		if c.levels > 0 && len(levels) != c.levels || c.levels == 0 && len(levels) < 2 {
			t.Errorf("%s: %d levels, want %d (0: several)", c.name, len(levels), c.levels)
		}
		if c.last >= 0 && last.iterations != c.last {
			t.Errorf("%s: %d iterations over the whole graph, want %d", c.name, last.iterations, c.last)
		}
		var spent int64
		for i, l := range levels {
			spent += int64(l.iterations) * work(l.n, l.edges)
			if i > 0 && (l.n/levelRatio != levels[i-1].n || l.iterations < minRefine || l.speed != p.WarmSpeed) {
				t.Errorf("%s: level %d %+v after %+v", c.name, i, l, levels[i-1])
			}
		}
		if len(levels) > 1 {
			if levels[0].speed != 1 || levels[0].iterations > p.Iterations {
				t.Errorf("%s: coarsest level %+v", c.name, levels[0])
			}
			// The budget holds unless the minimum refinement exceeds it.
			if spent > p.Budget && last.iterations > minRefine {
				t.Errorf("%s: %d units spent, budget %d", c.name, spent, p.Budget)
			}
		}
	}
}

// TestPrefix: the graph among the first k nodes, and the edge counts of
// every prefix, match those built from the filtered edge list.
func TestPrefix(t *testing.T) {
	g := generated(t, 500, 3000)
	within := prefixEdges(g)
	for _, k := range []int{0, 1, 37, 125, 499, 500} {
		var a, b []uint32
		for i := range k {
			for _, j := range g.Neighbours(i) {
				if int(j) < i {
					a, b = append(a, uint32(i)), append(b, j)
				}
			}
		}
		want, _ := FromEdges(k, a, b)
		got := prefix(g, k)
		if !slices.Equal(got.Offsets, want.Offsets) || !slices.Equal(got.Adj, want.Adj) {
			t.Errorf("prefix %d differs from the graph of its edges", k)
		}
		if within[k] != want.NumEdges() {
			t.Errorf("prefix %d: %d edges counted, %d there", k, within[k], want.NumEdges())
		}
	}
}

// TestMultilevelCommunities: a multilevel cold start (forced here by a
// small budget) keeps planted communities apart as well as
// TestCommunitiesApart asks of the full one.
func TestMultilevelCommunities(t *testing.T) {
	const k = 4
	in, gen := communityInput(t, 1200, 9000, k)
	p := Params{Budget: 40_000} // a single level would need 150 × ~1,450
	x, y, st, err := Map(context.Background(), in, p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Levels < 2 || st.Work > 40_000 {
		t.Fatalf("want a multilevel layout within the budget: %+v", st.RunStats)
	}
	own, other, n := communityDistances(x, y, k, gen.Community)
	t.Logf("placed %d; mean distance to own centre %.1f, to the nearest other %.1f (ratio %.2f); %+v", n, own, other, own/other, st.RunStats)
	if own/other > 0.6 {
		t.Errorf("communities not apart: mean distance to own centre %.1f, to the nearest other %.1f", own, other)
	}
}
