package community

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// Params tune Detect. The zero value takes the defaults given on each.
type Params struct {
	// Workers share out the building of each level's graph: <= 0 means
	// GOMAXPROCS. The result is the same for any number.
	Workers int
	// MoveWorkers share out local moving on big levels, in parallel
	// batches (see move.go): <= 1 means one, local moving node after
	// node. The result is the same for any number. One is the default
	// because on the project's machine (2 virtual cores) the batches
	// took about twice the CPU time of the sequential sweep, and
	// finished later: on graphgen's M graph, best of three in one process
	// at load 3-4, Detect took 2.74-3.03 s (CPU 4.6-5.0 s) with two
	// workers for local moving, 2.11-2.28 s (CPU 2.3-2.5 s) with one
	// (and two for the rest). Machines with more cores may gain from more.
	MoveWorkers int
	// Resolution is modularity's γ: higher finds more, smaller
	// communities. 0 means 1 (classic modularity).
	Resolution float64
	// MaxLevels bounds the aggregation levels: 0 means 20.
	MaxLevels int
	// MaxSweeps bounds one level's local moving to MaxSweeps × n node
	// visits: 0 means 4. On graphgen's M graph (no planted communities,
	// the slowest to settle) level 0 stops at 4.0M visits, for a
	// modularity of 0.166; it would settle after 4.9M, at 0.170.
	MaxSweeps int
	// RefineSweeps, when above 0, refines the communities after the last
	// aggregation: each level, from the top down, starts from the
	// communities found above it and its nodes move again (local moving,
	// at most RefineSweeps × n visits), so that nodes that an early stop
	// or a coarser level's merge left misplaced find a better community
	// (the multi-level refinement of Rotta and Noack 2011). 0: none (the
	// rebuild's choice for now). On graphgen's M graph, MaxSweeps 3 with
	// RefineSweeps 1 gives a modularity of 0.169 (149 communities)
	// against 0.166 (237) for the defaults, for about 6 % more CPU time
	// (best of four on two shared cores: 6.13 s against 5.79 s): the
	// refinement's sweep of level 0 costs less per adjacency entry than
	// local moving's (the communities are few and large, so a node weighs
	// few candidates, whose totals stay in cache), but it and the
	// modularity of level 0's partition cost more than the fourth sweep
	// they replace. It keeps every level's graph until the end.
	RefineSweeps int
}

func (p Params) withDefaults() Params {
	if p.Workers <= 0 {
		p.Workers = runtime.GOMAXPROCS(0)
	}
	if p.Resolution == 0 {
		p.Resolution = 1
	}
	if p.MaxLevels == 0 {
		p.MaxLevels = 20
	}
	if p.MaxSweeps == 0 {
		p.MaxSweeps = 4
	}
	return p
}

// Result is a partition of the nodes into communities.
type Result struct {
	// Community maps each node to its community, 0..len(Sizes)-1,
	// numbered by size (largest first; equal sizes by their smallest
	// node). An isolated node (no edge either way) has none: -1.
	Community []int32
	// Sizes holds each community's number of members.
	Sizes []int32
	// Modularity is the partition's modularity (at Resolution).
	Modularity float64
	// Levels is the number of aggregation levels; Sweeps the local-moving
	// node visits over all levels, in units of each level's node count.
	Levels, Sweeps int
}

// Detect finds communities of the graph of n nodes given by its
// in-edges: in(v) lists node v's in-neighbours (rank.CSR's In: each source
// listed once per target, no self-loops). The graph is taken as
// undirected; a pair of nodes that link both ways weighs 2. Its adjacency
// lists are 32-bit: a graph of 2³¹ edges or more is refused.
func Detect(ctx context.Context, n uint32, in func(v uint32) []uint32, p Params) (*Result, error) {
	p = p.withDefaults()
	g, label, err := undirected(n, in, p.Workers)
	if err != nil {
		return nil, err
	}
	res := &Result{Community: make([]int32, n)}
	if g.m2 == 0 {
		for v := range res.Community {
			res.Community[v] = -1
		}
		return res, nil
	}
	// node[v] is v's community at the current level: a node of g.
	node := make([]int32, n)
	for v := range node {
		node[v] = int32(label[v])
	}
	// With refinement the levels are kept: levels[l] is level l's graph,
	// up[l] maps its nodes to level l+1's.
	refine := p.RefineSweeps > 0
	var levels []*graph
	var up [][]int32
	for level := 0; level < p.MaxLevels; level++ {
		comm, moved, sweeps, err := g.localMove(ctx, p, p.MaxSweeps, nil)
		res.Sweeps += sweeps
		if err != nil {
			return nil, err
		}
		if !moved {
			break
		}
		nc := renumber(comm)
		for v, c := range node {
			node[v] = comm[c]
		}
		if refine {
			levels = append(levels, g)
			up = append(up, comm)
		}
		g = g.aggregate(comm, nc, p.Workers)
		res.Levels++
	}
	nc := g.n // node's values are below nc
	if refine && len(levels) > 0 {
		part, sweeps, err := refineLevels(ctx, p, levels, up, g.n)
		res.Sweeps += sweeps
		if err != nil {
			return nil, err
		}
		for v := range node {
			node[v] = part[label[v]]
		}
		nc = levels[0].n
		res.Modularity = levels[0].partitionModularity(part, p.Resolution, p.Workers)
	} else {
		res.Modularity = g.modularity(p.Resolution)
	}

	// Number by size, largest first, then by smallest member; isolated
	// nodes (weighted degree 0 at level 0) get none.
	sizes := make([]int32, nc)
	first := make([]int32, nc)
	for c := range first {
		first[c] = -1
	}
	for v, c := range node {
		if g.isolated[label[v]] {
			continue
		}
		sizes[c]++
		if first[c] < 0 {
			first[c] = int32(v)
		}
	}
	order := make([]int32, 0, nc)
	for c := range int32(nc) {
		if sizes[c] > 0 {
			order = append(order, c)
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if sizes[a] != sizes[b] {
			return int(sizes[b]) - int(sizes[a])
		}
		return int(first[a]) - int(first[b])
	})
	id := make([]int32, nc)
	res.Sizes = make([]int32, len(order))
	for i, c := range order {
		id[c] = int32(i)
		res.Sizes[i] = sizes[c]
	}
	for v, c := range node {
		if g.isolated[label[v]] {
			res.Community[v] = -1
		} else {
			res.Community[v] = id[c]
		}
	}
	return res, nil
}

// graph is a weighted undirected graph as symmetric adjacency lists: an
// edge {u, v} is listed under u and under v. Self-loops are kept apart,
// in self, as the weight inside an aggregated node counted both ways.
// Weights are whole numbers: every sum of them is at most m2, which
// Detect keeps below 2³², so they are held in 32 bits (half the memory
// that local moving reads at random, against float64).
type graph struct {
	n    int
	off  []uint32
	adj  []uint32
	w    []uint32 // nil: every entry weighs 1 (level 0, where a pair linking both ways is listed twice)
	self []uint32 // nil: none
	k    []uint32 // weighted degree, self-loops included
	m2   float64  // total weight, both ways: Σ k

	// isolated marks the level-0 nodes without edges (set on the graph
	// Detect ends with, from level 0's degrees).
	isolated []bool
}

// undirected builds the level-0 graph from an in-edge CSR, its nodes
// relabelled by degree (highest first; equal degrees in node order):
// label[v] is node v's index in the graph. Most links go to few popular
// domains, so with them first the community and weight arrays that local
// moving reads at random are more often in cache, and local moving, which
// sweeps the nodes in index order, settles the hubs first. Each node
// lists its in-neighbours, then its out-neighbours (in node order). It
// refuses a source outside 0..n-1 and a graph whose adjacency lists would
// not fit 32-bit offsets (2³¹ edges or more).
func undirected(n uint32, in func(v uint32) []uint32, workers int) (*graph, []uint32, error) {
	deg := make([]uint32, n)
	var edges uint64
	for v := range n {
		row := in(v)
		for _, s := range row {
			if s >= n {
				return nil, nil, fmt.Errorf("community: source %d is not a node of 0..%d", s, int64(n)-1)
			}
			deg[s]++
		}
		deg[v] += uint32(len(row))
		edges += uint64(len(row))
	}
	if 2*edges > math.MaxUint32 {
		return nil, nil, fmt.Errorf("community: %d edges: more than this package's 32-bit adjacency lists hold (2³¹-1)", edges)
	}
	byDeg, label := byDegree(deg)
	off := make([]uint32, n+1)
	var total uint32
	for i, v := range byDeg {
		off[i] = total
		total += deg[v]
	}
	off[n] = total
	adj := make([]uint32, total)
	cur := make([]uint32, n) // each graph node's write cursor for its out-neighbours
	// In-neighbours: each row its own, so rows apart in parallel.
	parallel(int(n), workers, off, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			at := off[i]
			for _, s := range in(byDeg[i]) {
				adj[at] = label[s]
				at++
			}
			cur[i] = at
		}
	})
	// Out-neighbours: worker w writes the rows of the sources in its
	// share of 0..n-1, scanning every edge; a row gets its entries in
	// node order whoever writes it.
	parallel(int(n), workers, nil, func(lo, hi int) {
		for v := range n {
			var lv uint32
			seen := false
			for _, s := range in(v) {
				if s < uint32(lo) || s >= uint32(hi) {
					continue
				}
				if !seen {
					lv, seen = label[v], true
				}
				ls := label[s]
				adj[cur[ls]] = lv
				cur[ls]++
			}
		}
	})
	k := make([]uint32, n)
	isolated := make([]bool, n)
	for i := range n {
		k[i] = off[i+1] - off[i]
		isolated[i] = k[i] == 0
	}
	return &graph{n: int(n), off: off, adj: adj, k: k, m2: float64(total), isolated: isolated}, label, nil
}

// byDegree orders the nodes by degree, highest first, then by node:
// byDeg[i] is the node at index i, label[v] node v's index. A counting
// sort over the degrees (below 2n: another node links a node at most once
// each way): on a million Zipf-distributed degrees, 5 ms against 110 ms
// for sorting packed (degree, node) keys, on one core while the other
// waits.
func byDegree(deg []uint32) (byDeg, label []uint32) {
	n := len(deg)
	maxDeg := uint32(0)
	for _, d := range deg {
		maxDeg = max(maxDeg, d)
	}
	// at[d]: where the first node of degree d goes (higher degrees first).
	at := make([]uint32, int(maxDeg)+1)
	for _, d := range deg {
		at[d]++
	}
	var sum uint32
	for d := int(maxDeg); d >= 0; d-- {
		at[d], sum = sum, sum+at[d]
	}
	byDeg, label = make([]uint32, n), make([]uint32, n)
	for v, d := range deg {
		i := at[d]
		at[d]++
		byDeg[i], label[v] = uint32(v), i
	}
	return byDeg, label
}

// parallel calls fn on workers contiguous shares of 0..n-1 at once (one
// when n is small) and waits for them. With work (n+1 long, work[i] the
// work before item i, as a CSR's offsets), the shares hold about equal
// work, else equal numbers of items: in shares of equal numbers, one core
// mostly waited for the other (on graphgen's M graph the first half of the
// nodes by degree hold 89 % of the adjacency entries, and the first half
// of level 0's communities, numbered from the hubs', 97 %).
func parallel(n, workers int, work []uint32, fn func(lo, hi int)) {
	bounds := shares(n, workers, work)
	if len(bounds) == 2 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for p := range len(bounds) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(bounds[p], bounds[p+1])
		}()
	}
	wg.Wait()
}

// shares cuts 0..n into parallel's shares: the bounds, from 0 to n.
func shares(n, workers int, work []uint32) []int {
	parts := max(1, min(workers, n/4096))
	bounds := make([]int, parts+1)
	for p := range parts + 1 {
		bounds[p] = p * n / parts
		if work != nil && p > 0 && p < parts {
			target := uint32(uint64(work[n]) * uint64(p) / uint64(parts))
			bounds[p], _ = slices.BinarySearch(work[:n+1], target)
		}
	}
	return bounds
}

// renumber maps the communities of comm to 0..k-1 in order of their first
// node, rewriting comm, and returns k.
func renumber(comm []int32) int {
	id := make([]int32, len(comm))
	for i := range id {
		id[i] = -1
	}
	k := int32(0)
	for i, c := range comm {
		if id[c] < 0 {
			id[c] = k
			k++
		}
		comm[i] = id[c]
	}
	return int(k)
}

// aggregate makes the graph whose nodes are g's nc communities (comm maps
// g's nodes to 0..nc-1). Contiguous ranges of communities are built by
// separate workers into their own buffers and joined in order, so the
// result does not depend on the number of workers.
func (g *graph) aggregate(comm []int32, nc int, workers int) *graph {
	// Members of each community, by counting sort (in node order), and
	// the adjacency entries before each community's members.
	start := make([]uint32, nc+1)
	entries := make([]uint32, nc+1)
	for i, c := range comm {
		start[c+1]++
		entries[c+1] += g.off[i+1] - g.off[i]
	}
	for c := range nc {
		start[c+1] += start[c]
		entries[c+1] += entries[c]
	}
	members := make([]uint32, g.n)
	cur := slices.Clone(start[:nc])
	for i, c := range comm {
		members[cur[c]] = uint32(i)
		cur[c]++
	}

	ng := &graph{n: nc, off: make([]uint32, nc+1), self: make([]uint32, nc), k: make([]uint32, nc), m2: g.m2, isolated: g.isolated}
	bounds := shares(nc, workers, entries)
	parts := len(bounds) - 1
	type part struct {
		adj, w []uint32
		deg    []uint32
	}
	out := make([]part, parts)
	var wg sync.WaitGroup
	for pi := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := bounds[pi], bounds[pi+1]
			neigh := make([]uint32, nc)
			pos := make([]int32, 0, 64)
			var buf []int32
			var pt part
			pt.deg = make([]uint32, hi-lo)
			// Room for a quarter of the members' adjacency entries: most
			// aggregate into fewer (graphgen's M graph's level 0: a tenth).
			room := (entries[hi] - entries[lo]) / 4
			pt.adj = make([]uint32, 0, room)
			pt.w = make([]uint32, 0, room)
			for c := lo; c < hi; c++ {
				var self, k uint32
				for _, i := range members[start[c]:start[c+1]] {
					k += g.k[i]
					if g.self != nil {
						self += g.self[i]
					}
					row := g.adj[g.off[i]:g.off[i+1]]
					if cap(buf) < len(row) {
						buf = make([]int32, len(row))
					}
					buf = buf[:len(row)]
					for e, j := range row { // independent loads first: many cache misses in flight
						buf[e] = comm[j]
					}
					var w []uint32
					if g.w != nil {
						w = g.w[g.off[i]:g.off[i+1]]
					}
					for e, d := range buf {
						wt := uint32(1)
						if w != nil {
							wt = w[e]
						}
						if int(d) == c {
							self += wt
							continue
						}
						if neigh[d] == 0 {
							pos = append(pos, d)
						}
						neigh[d] += wt
					}
				}
				for _, d := range pos {
					pt.adj = append(pt.adj, uint32(d))
					pt.w = append(pt.w, neigh[d])
					neigh[d] = 0
				}
				pt.deg[c-lo] = uint32(len(pos))
				pos = pos[:0]
				ng.self[c], ng.k[c] = self, k
			}
			out[pi] = pt
		}()
	}
	wg.Wait()
	total := 0
	for _, pt := range out {
		total += len(pt.adj)
	}
	ng.adj = make([]uint32, 0, total)
	ng.w = make([]uint32, 0, total)
	c := 0
	var o uint32
	for _, pt := range out {
		for _, d := range pt.deg {
			ng.off[c] = o
			o += d
			c++
		}
		ng.adj = append(ng.adj, pt.adj...)
		ng.w = append(ng.w, pt.w...)
	}
	ng.off[nc] = o
	return ng
}

// refineLevels refines the communities found by local moving and
// aggregation (see Params.RefineSweeps): levels[l] is level l's graph,
// up[l] maps its nodes to level l+1's, whose top has top nodes. From the
// top down, each level starts from the communities of the level above
// and is swept again. It returns level 0's partition (each node's
// community: a node of level 0) and the visits in sweeps.
func refineLevels(ctx context.Context, p Params, levels []*graph, up [][]int32, top int) (part []int32, sweeps int, err error) {
	part = make([]int32, top) // level l's node → its community, a node of level l
	for c := range part {
		part[c] = int32(c)
	}
	for l := len(levels) - 1; l >= 0; l-- {
		init := make([]int32, levels[l].n)
		for i, c := range up[l] {
			init[i] = part[c]
		}
		comm, _, s, err := levels[l].localMove(ctx, p, p.RefineSweeps, init)
		sweeps += s
		if err != nil {
			return nil, sweeps, err
		}
		part = comm
	}
	return part, sweeps, nil
}

// modularity is Σ_c in_c/m2 - γ (tot_c/m2)² over g's nodes as communities.
func (g *graph) modularity(gamma float64) float64 {
	q := 0.0
	for c := range g.n {
		in := 0.0
		if g.self != nil {
			in = float64(g.self[c])
		}
		t := float64(g.k[c]) / g.m2
		q += in/g.m2 - gamma*t*t
	}
	return q
}

// partitionModularity is the modularity of the partition comm of g's
// nodes (comm[i]: a node of g, as local moving leaves it): Σ_c in_c/m2 -
// γ (tot_c/m2)², in_c the weight inside c counted both ways. The weights
// are summed as whole numbers, so the result does not depend on the
// number of workers.
func (g *graph) partitionModularity(comm []int32, gamma float64, workers int) float64 {
	var inside atomic.Uint64
	parallel(g.n, workers, g.off, func(lo, hi int) {
		var sum uint64
		for i := lo; i < hi; i++ {
			c := comm[i]
			if g.self != nil {
				sum += uint64(g.self[i])
			}
			row := g.adj[g.off[i]:g.off[i+1]]
			for e, j := range row {
				if comm[j] == c {
					if g.w == nil {
						sum++
					} else {
						sum += uint64(g.w[g.off[i]+uint32(e)])
					}
				}
			}
		}
		inside.Add(sum)
	})
	tot := make([]uint64, g.n)
	for i, c := range comm {
		tot[c] += uint64(g.k[i])
	}
	q := float64(inside.Load()) / g.m2
	for _, t := range tot {
		f := float64(t) / g.m2
		q -= gamma * f * f
	}
	return q
}
