package community

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"
)

// Params tune Detect. The zero value takes the defaults given on each.
type Params struct {
	// Workers share out the building of each level's graph: <= 0 means
	// GOMAXPROCS. The result is the same for any number.
	Workers int
	// Resolution is modularity's γ: higher finds more, smaller
	// communities. 0 means 1 (classic modularity).
	Resolution float64
	// MaxLevels bounds the aggregation levels: 0 means 20.
	MaxLevels int
	// MaxSweeps bounds one level's local moving to MaxSweeps × n node
	// visits: 0 means 4 (32 took graphgen's M graph's modularity from
	// 0.166 to 0.170, moving one node at a time, for half again the time).
	MaxSweeps int
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
	var edges uint64
	for v := range n {
		for _, s := range in(v) {
			if s >= n {
				return nil, fmt.Errorf("community: source %d is not a node of 0..%d", s, int64(n)-1)
			}
		}
		edges += uint64(len(in(v)))
	}
	if 2*edges > math.MaxUint32 {
		return nil, fmt.Errorf("community: %d edges: more than this package's 32-bit adjacency lists hold (2³¹-1)", edges)
	}
	g, label := undirected(n, in)
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
	for level := 0; level < p.MaxLevels; level++ {
		move := g.move
		if g.n >= batchedMin {
			move = g.moveBatched
		}
		comm, moved, sweeps, err := move(ctx, level, p)
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
		g = g.aggregate(comm, nc, p.Workers)
		res.Levels++
	}
	res.Modularity = g.modularity(p.Resolution)

	// Number by size, largest first, then by smallest member; isolated
	// nodes (weighted degree 0 at level 0) get none.
	nc := g.n
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
type graph struct {
	n    int
	off  []uint32
	adj  []uint32
	w    []uint32  // nil: every entry weighs 1 (level 0, where a pair linking both ways is listed twice)
	self []float64 // nil: none
	k    []float64 // weighted degree, self-loops included
	m2   float64   // total weight, both ways: Σ k

	// isolated marks the level-0 nodes without edges (set on the graph
	// Detect ends with, from level 0's degrees).
	isolated []bool
}

// undirected builds the level-0 graph from an in-edge CSR, its nodes
// relabelled by degree (highest first; equal degrees in node order):
// label[v] is node v's index in the graph. Most links go to few popular
// domains, so with them first the community and weight arrays that local
// moving reads at random are more often in cache (graphgen's M graph:
// 19 s rather than 22 s, the machine shared). Each node lists its
// in-neighbours, then its out-neighbours.
func undirected(n uint32, in func(v uint32) []uint32) (*graph, []uint32) {
	deg := make([]uint32, n)
	for v := range n {
		deg[v] += uint32(len(in(v)))
		for _, s := range in(v) {
			deg[s]++
		}
	}
	byDeg := make([]uint32, n) // graph index → node
	for v := range byDeg {
		byDeg[v] = uint32(v)
	}
	slices.SortStableFunc(byDeg, func(a, b uint32) int { return int(deg[b]) - int(deg[a]) })
	label := make([]uint32, n)
	for i, v := range byDeg {
		label[v] = uint32(i)
	}
	off := make([]uint32, n+1)
	var total uint32
	for i, v := range byDeg {
		off[i] = total
		total += deg[v]
	}
	off[n] = total
	adj := make([]uint32, total)
	cur := make([]uint32, n) // each graph node's write cursor
	for i, v := range byDeg {
		at := off[i]
		for _, s := range in(v) {
			adj[at] = label[s]
			at++
		}
		cur[i] = at
	}
	for v := range n {
		lv := label[v]
		for _, s := range in(v) {
			ls := label[s]
			adj[cur[ls]] = lv
			cur[ls]++
		}
	}
	k := make([]float64, n)
	isolated := make([]bool, n)
	for i := range n {
		k[i] = float64(off[i+1] - off[i])
		isolated[i] = k[i] == 0
	}
	return &graph{n: int(n), off: off, adj: adj, k: k, m2: float64(total), isolated: isolated}, label
}

// move runs Louvain's local moving on g, as Leiden's fast variant does
// (Traag et al. 2019): the nodes wait in a queue, first all of them in a
// fixed pseudo-random order; each in turn joins the neighbouring community
// that most raises modularity, and when it moves, its neighbours outside
// its new community join the queue again if they are not in it: only nodes
// whose surroundings changed are looked at again. It stops when the queue
// is empty or after p.MaxSweeps × n node visits. It returns each node's
// community (a node index of g) and whether any node moved; sweeps counts
// node visits in units of n.
func (g *graph) move(ctx context.Context, level int, p Params) (comm []int32, moved bool, sweeps int, err error) {
	n := g.n
	comm = make([]int32, n)
	tot := make([]float64, n)
	for i := range comm {
		comm[i] = int32(i)
		tot[i] = g.k[i]
	}
	queue := permutation(n, uint64(level)) // a ring of n slots: each node is in it once at most
	queued := make([]bool, n)
	for i := range queued {
		queued[i] = true
	}
	head, size := 0, n
	neigh := make([]uint32, n) // weights are whole: uint32 halves what the random reads touch
	touched := make([]int32, 0, 64)
	gamma := p.Resolution / g.m2
	limit := p.MaxSweeps * n
	visits := 0
	for size > 0 && visits < limit {
		if visits%(1<<16) == 0 {
			if err := ctx.Err(); err != nil {
				return nil, false, visits / n, err
			}
		}
		visits++
		i := queue[head]
		head++
		if head == n {
			head = 0
		}
		size--
		queued[i] = false
		ki := g.k[i]
		if ki == 0 {
			continue
		}
		ci := comm[i]
		lo, hi := g.off[i], g.off[i+1]
		for e := lo; e < hi; e++ {
			c := comm[g.adj[e]]
			if neigh[c] == 0 {
				touched = append(touched, c)
			}
			if g.w == nil {
				neigh[c]++
			} else {
				neigh[c] += g.w[e]
			}
		}
		tot[ci] -= ki
		best := ci
		bestGain := float64(neigh[ci]) - gamma*tot[ci]*ki
		// Ties: staying wins, then the smallest community.
		for _, c := range touched {
			if c == ci {
				continue
			}
			d := float64(neigh[c]) - gamma*tot[c]*ki
			if d > bestGain || (d == bestGain && best != ci && c < best) {
				best, bestGain = c, d
			}
		}
		tot[best] += ki
		for _, c := range touched {
			neigh[c] = 0
		}
		touched = touched[:0]
		if best == ci {
			continue
		}
		comm[i] = best
		moved = true
		for e := lo; e < hi; e++ {
			j := g.adj[e]
			if !queued[j] && comm[j] != best {
				queued[j] = true
				t := head + size
				if t >= n {
					t -= n
				}
				queue[t] = j
				size++
			}
		}
	}
	return comm, moved, (visits + n - 1) / n, nil
}

// moveBatched is local moving in fixed batches of batchSize nodes of a
// fixed pseudo-random order: the workers choose the best community of the
// batch's nodes against the communities as they stood when the batch
// began (read only), then the moves are applied in order. The batches do
// not depend on the number of workers, so neither does the result. It
// sweeps the nodes until a sweep gains less than p.MinGain or after
// p.MaxSweeps sweeps.
func (g *graph) moveBatched(ctx context.Context, level int, p Params) (comm []int32, moved bool, sweeps int, err error) {
	n := g.n
	comm = make([]int32, n)
	tot := make([]float64, n)
	for i := range comm {
		comm[i] = int32(i)
		tot[i] = g.k[i]
	}
	order := permutation(n, uint64(level))
	gamma := p.Resolution / g.m2
	workers := max(1, min(p.Workers, n/batchSize))
	best := make([]int32, batchSize)
	scratch := make([][]uint32, workers)
	for w := range scratch {
		scratch[w] = make([]uint32, n)
	}
	// choose sets best[j] for order[lo+j], lo <= j < hi of the batch.
	choose := func(w int, batch []uint32, lo, hi int) {
		neigh := scratch[w]
		touched := make([]int32, 0, 64)
		for j := lo; j < hi; j++ {
			i := batch[j]
			ci := comm[i]
			best[j] = ci
			ki := g.k[i]
			if ki == 0 {
				continue
			}
			for e := g.off[i]; e < g.off[i+1]; e++ {
				c := comm[g.adj[e]]
				if neigh[c] == 0 {
					touched = append(touched, c)
				}
				if g.w == nil {
					neigh[c]++
				} else {
					neigh[c] += g.w[e]
				}
			}
			totI := tot[ci] - ki
			b := ci
			bestGain := float64(neigh[ci]) - gamma*totI*ki
			// Ties: staying wins, then the smallest community.
			for _, c := range touched {
				if c == ci {
					continue
				}
				d := float64(neigh[c]) - gamma*tot[c]*ki
				if d > bestGain || (d == bestGain && b != ci && c < b) {
					b, bestGain = c, d
				}
			}
			for _, c := range touched {
				neigh[c] = 0
			}
			touched = touched[:0]
			best[j] = b
		}
	}
	for sweeps < p.MaxSweeps {
		if err := ctx.Err(); err != nil {
			return nil, false, sweeps, err
		}
		sweeps++
		moves := 0
		for lo := 0; lo < n; lo += batchSize {
			batch := order[lo:min(n, lo+batchSize)]
			if workers == 1 {
				choose(0, batch, 0, len(batch))
			} else {
				var wg sync.WaitGroup
				for w := range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						choose(w, batch, w*len(batch)/workers, (w+1)*len(batch)/workers)
					}()
				}
				wg.Wait()
			}
			for j, i := range batch {
				if c := best[j]; c != comm[i] {
					tot[comm[i]] -= g.k[i]
					tot[c] += g.k[i]
					comm[i] = c
					moves++
				}
			}
		}
		if moves > 0 {
			moved = true
		}
		if moves*1000 < n { // fewer than 0.1% of the nodes moved: settled
			break
		}
	}
	return comm, moved, sweeps, nil
}

// batchSize is how many nodes choose their moves together.
const batchSize = 1024

// batchedMin is the least level that moveBatched moves: smaller ones move
// one node at a time (move), as a batch that is a large share of the
// graph makes neighbours swap communities back and forth. (A variable so
// that tests can run the batched path on small graphs.)
var batchedMin = 1 << 18

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
	// Members of each community, by counting sort (in node order).
	start := make([]uint32, nc+1)
	for _, c := range comm {
		start[c+1]++
	}
	for c := range nc {
		start[c+1] += start[c]
	}
	members := make([]uint32, g.n)
	cur := slices.Clone(start[:nc])
	for i, c := range comm {
		members[cur[c]] = uint32(i)
		cur[c]++
	}

	ng := &graph{n: nc, off: make([]uint32, nc+1), self: make([]float64, nc), k: make([]float64, nc), m2: g.m2, isolated: g.isolated}
	parts := max(1, min(workers, nc/4096))
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
			lo, hi := pi*nc/parts, (pi+1)*nc/parts
			neigh := make([]uint32, nc)
			pos := make([]int32, 0, 64)
			var pt part
			pt.deg = make([]uint32, hi-lo)
			for c := lo; c < hi; c++ {
				self, k := 0.0, 0.0
				for _, i := range members[start[c]:start[c+1]] {
					k += g.k[i]
					if g.self != nil {
						self += g.self[i]
					}
					for e := g.off[i]; e < g.off[i+1]; e++ {
						wt := uint32(1)
						if g.w != nil {
							wt = g.w[e]
						}
						d := comm[g.adj[e]]
						if int(d) == c {
							self += float64(wt)
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

// modularity is Σ_c in_c/m2 - γ (tot_c/m2)² over g's nodes as communities.
func (g *graph) modularity(gamma float64) float64 {
	q := 0.0
	for c := range g.n {
		in := 0.0
		if g.self != nil {
			in = g.self[c]
		}
		t := g.k[c] / g.m2
		q += in/g.m2 - gamma*t*t
	}
	return q
}

// permutation is a fixed pseudo-random order of 0..n-1 (Fisher–Yates over
// splitmix64, written out so that it never changes with the Go release).
func permutation(n int, seed uint64) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = uint32(i)
	}
	x := seed*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d
	for i := n - 1; i > 0; i-- {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		j := int(z % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}
