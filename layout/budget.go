package layout

import (
	"math"
	"slices"
)

// The layout's effort is bounded by Params.Budget, counted in work units:
// one iteration over a graph of n nodes and m edges costs n + m/edgeShare
// units. A node's Barnes–Hut walk costs about as much as edgeShare edge
// visits (measured on 200,000 nodes and 2,000,000 edges: about a
// microsecond against 30 ns), so the unit is about a node's share of one
// iteration, whatever the graph's density.
const edgeShare = 32

// work is the cost of one iteration over n nodes and m edges.
func work(n, m int) int64 { return int64(n) + int64(m)/edgeShare }

// defaultBudget is DefaultParams.Budget: about 3.5 CPU seconds of
// iterations (measured at about 1.1 µs a unit with theta 1.6), so that
// laying out the top 200,000 of a million domains and placing the rest
// takes about 3 s on two cores. Layouts of up to about 15,000 nodes and
// 150,000 edges get the full cold iterations; bigger ones fewer per
// level, and a warm start over 200,000 nodes and 1.5 million edges about
// a dozen iterations (see plan).
const defaultBudget = 3_000_000

// levelRatio is how much bigger each level of a multilevel cold start is
// than the one before it. Measured on 200,000 nodes with 20 planted
// communities and a budget of 3,000,000 (own/other distance, lower is
// better; 0.37 after 150 full iterations): 2: 0.63, 4: 0.44, 8: 0.42,
// 16: 0.46, 32: 0.46.
const levelRatio = 8

// minRefine is the fewest iterations a level of a multilevel cold start
// gets, whatever the budget: placing nodes beside their neighbours leaves
// them on top of each other until a few iterations spread them.
const minRefine = 3

// level is one stage of a layout: the first n nodes (in the graph's
// order: best ranked first), iterated so many times from speed.
type level struct {
	n, edges   int
	iterations int
	speed      float64
}

// plan chooses the levels of a Run. A warm start is one level: the whole
// graph, p.WarmIterations or as many as the budget pays for (at least
// one). A cold start that fits the budget is one level of p.Iterations.
// A bigger cold start is multilevel: the first n/8^k nodes (the best
// ranked, which link to each other most) are laid out cold with
// p.Iterations, at most half the budget; then each level eight times bigger
// starts from the one before (its new nodes beside their placed
// neighbours) and is refined, the rest of the budget shared so that every
// level gets the same number of iterations (at least minRefine).
//
// It depends only on the graph's size, its edges among each prefix and
// p, so it is the same on every machine.
func plan(g *Graph, warm bool, p Params) []level {
	n, m := g.N(), g.NumEdges()
	budget := p.Budget
	if budget < 0 {
		budget = math.MaxInt64
	}
	full := work(n, m)
	if warm {
		it := int64(p.WarmIterations)
		if it*full > budget {
			it = max(1, budget/max(full, 1))
		}
		return []level{{n: n, edges: m, iterations: int(it), speed: p.WarmSpeed}}
	}
	if int64(p.Iterations)*full <= budget || n <= levelRatio*leafBodies {
		it := int64(p.Iterations)
		if it*full > budget {
			it = max(1, budget/max(full, 1))
		}
		return []level{{n: n, edges: m, iterations: int(it), speed: 1}}
	}
	// Sizes from the whole graph down, until the coarsest one's full
	// iterations fit half the budget.
	within := prefixEdges(g)
	sizes := []int{n}
	for {
		k := sizes[len(sizes)-1] / levelRatio
		sizes = append(sizes, k)
		if int64(p.Iterations)*work(k, within[k]) <= budget/2 || k <= levelRatio*leafBodies {
			break
		}
	}
	slices.Reverse(sizes)
	coarse := work(sizes[0], within[sizes[0]])
	first := min(int64(p.Iterations), max(1, budget/2/max(coarse, 1)))
	levels := []level{{n: sizes[0], edges: within[sizes[0]], iterations: int(first), speed: 1}}
	var rest int64
	for _, k := range sizes[1:] {
		rest += work(k, within[k])
	}
	left := budget - first*coarse
	refine := max(minRefine, min(int64(p.WarmIterations), left/max(rest, 1)))
	for _, k := range sizes[1:] {
		levels = append(levels, level{n: k, edges: within[k], iterations: int(refine), speed: p.WarmSpeed})
	}
	return levels
}

// prefixEdges returns, for every k in 0..n, the number of edges among the
// first k nodes.
func prefixEdges(g *Graph) []int {
	n := g.N()
	within := make([]int, n+1)
	for i := range n {
		// Rows are sorted: the neighbours below i come first.
		row := g.Neighbours(i)
		below, _ := slices.BinarySearch(row, uint32(i))
		within[i+1] = within[i] + below
	}
	return within
}

// prefix is the graph among the first k nodes of g.
func prefix(g *Graph, k int) *Graph {
	if k >= g.N() {
		return g
	}
	offsets := make([]uint32, k+1)
	adj := make([]uint32, 0, g.Offsets[k])
	for i := range k {
		offsets[i] = uint32(len(adj))
		row := g.Neighbours(i)
		end, _ := slices.BinarySearch(row, uint32(k))
		adj = append(adj, row[:end]...)
	}
	offsets[k] = uint32(len(adj))
	sub := &Graph{Offsets: offsets, Adj: slices.Clip(adj)}
	if g.Community != nil {
		sub.Community = g.Community[:k]
	}
	return sub
}
