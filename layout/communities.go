package layout

import (
	"cmp"
	"math"
	"slices"
)

// Communities on the map. When the graph's nodes have communities
// (Graph.Community), the layout draws each as a region of its own:
//
//   - A cold start seeds positions by community: the communities are laid
//     out first, as one node each (weighing their member count, pulled
//     together by the links between them), each gets a disk whose area
//     follows its size, and its members start in it. A multilevel cold
//     start seeds its coarsest level so, and the nodes each finer level
//     adds start beside their laid-out neighbours of their community (or
//     in their community's disk, when they have none).
//   - Every iteration pulls along a link between two communities with
//     Params.Between times the force along a link within one, so that
//     regions stay apart as the layout settles, over warm starts too.
//
// Without communities the layout is ForceAtlas2 as it was. Measured on
// graphgen's S graph (100,000 domains, no planted communities: Louvain's
// 37, modularity 0.17) by the share of each node's 10 nearest nodes on
// the map that are of its community: see TestCommunitiesTogether and
// BenchmarkLayout.

// maxSeedCommunities bounds the communities laid out as nodes when
// seeding: the largest ones; the members of the others start beside
// their neighbours. It bounds the seeding's work (seedIterations over at
// most this many nodes and their links) to a small share of the budget.
const (
	maxSeedCommunities = 512
	seedIterations     = 150
)

// seeds are the communities' starting disks: centre and radius, in the
// frame of a cold start of all of the graph's nodes (half side
// coldRadius(n)).
type seeds struct {
	index     map[int32]int // community → disk
	cx, cy, r []float64
	n         int
}

// seedCommunities lays out g's communities as nodes and gives each a disk
// (nil when g has fewer than two communities). It returns the work spent,
// in the budget's units.
func seedCommunities(g *Graph, p Params) (*seeds, int64) {
	if g.Community == nil {
		return nil, 0
	}
	n := g.N()
	count := map[int32]int{}
	for _, c := range g.Community {
		if c >= 0 {
			count[c]++
		}
	}
	if len(count) < 2 {
		return nil, 0
	}
	ids := make([]int32, 0, len(count))
	for c := range count {
		ids = append(ids, c)
	}
	slices.SortFunc(ids, func(a, b int32) int { // largest first, then by id
		if d := cmp.Compare(count[b], count[a]); d != 0 {
			return d
		}
		return cmp.Compare(a, b)
	})
	ids = ids[:min(len(ids), maxSeedCommunities)]
	k := len(ids)
	s := &seeds{index: make(map[int32]int, k), cx: make([]float64, k), cy: make([]float64, k), r: make([]float64, k), n: n}
	for i, c := range ids {
		s.index[c] = i
	}
	// Links between communities, a dense matrix (k <= 512: 1 MiB at most).
	links := make([]uint32, k*k)
	dense := make([]int32, n)
	for i, c := range g.Community {
		dense[i] = -1
		if d, ok := s.index[c]; c >= 0 && ok {
			dense[i] = int32(d)
		}
	}
	for i := range n {
		a := dense[i]
		if a < 0 {
			continue
		}
		for _, j := range g.Neighbours(i) {
			if b := dense[j]; int(j) > i && b >= 0 && b != a {
				links[int(a)*k+int(b)]++
				links[int(b)*k+int(a)]++
			}
		}
	}
	// The community graph: one node each, its member count as mass, its
	// links' counts as weights (scaled to a mean of 1).
	offsets := make([]uint32, k+1)
	var adj []uint32
	var w []float32
	var total float64
	for a := range k {
		for b := range k {
			if l := links[a*k+b]; l > 0 {
				adj = append(adj, uint32(b))
				w = append(w, float32(l))
				total += float64(l)
			}
		}
		offsets[a+1] = uint32(len(adj))
	}
	if len(w) > 0 {
		mean := float32(total / float64(len(w)))
		for e := range w {
			w[e] /= mean
		}
	}
	cg := &Graph{Offsets: offsets, Adj: adj}
	x, y := make([]float64, k), make([]float64, k)
	for i, c := range ids {
		x[i], y[i] = square(mix(uint64(uint32(c))+0x3c6ef372), p.Seed, coldRadius(k))
	}
	sim := newSim(cg, x, y, p)
	sim.w = w
	for i, c := range ids {
		sim.mass[i] = float64(count[c])
	}
	for range seedIterations {
		sim.step()
	}
	// Disks: areas in proportion to member counts, filling about half the
	// cold start's square; the centres spread so that the median
	// community just touches its nearest neighbour.
	rho := coldRadius(n) * math.Sqrt(0.5*4/math.Pi/float64(n))
	for i, c := range ids {
		s.r[i] = rho * math.Sqrt(float64(count[c]))
	}
	ratios := make([]float64, 0, k)
	for a := range k {
		best, touch := math.Inf(1), 0.0
		for b := range k {
			if b == a {
				continue
			}
			d := math.Hypot(sim.pos[a].x-sim.pos[b].x, sim.pos[a].y-sim.pos[b].y)
			if d < best {
				best, touch = d, s.r[a]+s.r[b]
			}
		}
		if best > 0 {
			ratios = append(ratios, touch/best)
		}
	}
	f := 1.0
	if len(ratios) > 0 {
		slices.Sort(ratios)
		f = ratios[len(ratios)/2]
	}
	for i := range k {
		s.cx[i], s.cy[i] = sim.pos[i].x*f, sim.pos[i].y*f
	}
	return s, seedIterations * work(k, len(adj)/2)
}

// point is where a node of community c with key starts in a cold start of
// n nodes: a point of its community's disk, scaled to that start's frame;
// ok is false for a community without a disk.
func (s *seeds) point(c int32, key, seed uint64, n int) (x, y float64, ok bool) {
	if s == nil || c < 0 {
		return 0, 0, false
	}
	d, ok := s.index[c]
	if !ok {
		return 0, 0, false
	}
	f := coldRadius(n) / coldRadius(s.n)
	dx, dy := disk(key, seed, s.r[d])
	return (s.cx[d] + dx) * f, (s.cy[d] + dy) * f, true
}

// attraction returns the weight of each of g's adjacency entries for
// ForceAtlas2's attraction: 1 within a community (or where either end has
// none), between across communities; nil when g has no communities or
// between is 1.
func attraction(g *Graph, between float64) []float32 {
	if g.Community == nil || between == 1 {
		return nil
	}
	w := make([]float32, len(g.Adj))
	forChunks(g.N(), 0, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			ci := g.Community[i]
			for e := g.Offsets[i]; e < g.Offsets[i+1]; e++ {
				cj := g.Community[g.Adj[e]]
				if ci >= 0 && cj >= 0 && ci != cj {
					w[e] = float32(between)
				} else {
					w[e] = 1
				}
			}
		}
	})
	return w
}

// centroids are the mean positions of the placed nodes of each
// community, and the mean distance of those nodes from it.
type centroids map[int32]*struct{ x, y, spread float64 }

// communityCentroids of the placed nodes of g (summed in node order).
func communityCentroids(g *Graph, x, y []float64, placed []bool) centroids {
	if g.Community == nil {
		return nil
	}
	type acc struct {
		x, y float64
		n    int
	}
	sums := map[int32]*acc{}
	for i, c := range g.Community {
		if c < 0 || !placed[i] {
			continue
		}
		a := sums[c]
		if a == nil {
			a = &acc{}
			sums[c] = a
		}
		a.x += x[i]
		a.y += y[i]
		a.n++
	}
	cs := centroids{}
	for c, a := range sums {
		cs[c] = &struct{ x, y, spread float64 }{a.x / float64(a.n), a.y / float64(a.n), 0}
	}
	for i, c := range g.Community {
		if c >= 0 && placed[i] {
			m := cs[c]
			m.spread += math.Hypot(x[i]-m.x, y[i]-m.y) / float64(sums[c].n)
		}
	}
	return cs
}
