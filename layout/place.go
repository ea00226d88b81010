package layout

import (
	"math"

	"github.com/mapthenet/mapthenet/rank"
)

// maxPlaceWaves bounds Place's waves: a ranked node further than this many
// links from every laid-out node stays unplaced.
const maxPlaceWaves = 8

// Place puts every node of g that want allows and that has no position
// yet (x[v] is NaN) at the mean position of its placed neighbours, either
// direction (it links to them or they to it), plus a jitter of radius
// jitter drawn from key(v) and seed. Given communities (community not
// nil; -1: none), a node with placed neighbours of its own community goes
// to their mean instead, so that it joins its community's region rather
// than the middle of all its links. It works in waves: the first places
// the nodes next to one already placed, the next those next to one of
// those, and so on, up to maxPlaceWaves; each wave sees only the nodes
// placed before it, so the result does not depend on any order but the
// graph's. Nodes still unplaced keep NaN. It returns how many it placed.
//
// Each wave is one sequential pass over the rows of g that can matter:
// the first over every edge, the later ones only over the rows of nodes
// still open and of nodes the wave before placed (a node still open had
// no placed neighbour then, so only those can be new to it). The sums are
// added in edge order, so they are reproducible; the first wave over ten
// million edges takes a few tens of milliseconds, the others far less.
func Place(g *rank.CSR, x, y []float64, want func(v uint32) bool, key func(v uint32) uint64, jitter float64, seed uint64, community func(v uint32) int32) int {
	n := g.N
	// A node's sums side by side: one cache miss per edge, not three;
	// those over its own community's neighbours too.
	type sums struct {
		x, y, ox, oy float64
		n, own       uint32
	}
	acc := make([]sums, n)
	var comm []int32
	if community != nil {
		comm = make([]int32, n)
		for v := range n {
			comm[v] = community(v)
		}
	}
	same := func(a, b uint32) bool { return comm != nil && comm[a] >= 0 && comm[a] == comm[b] }
	// state: what each node is in this wave.
	const (
		other    = iota // unranked, or placed before the wave before
		open            // wanted, no position yet
		frontier        // placed by the wave before (or before the first)
	)
	state := make([]uint8, n)
	for v := range n {
		switch {
		case !math.IsNaN(x[v]):
			state[v] = frontier
		case want(uint32(v)):
			state[v] = open
		}
	}
	total := 0
	for range maxPlaceWaves {
		for v := range n {
			switch state[v] {
			case open:
				for _, u := range g.In(v) {
					if state[u] == frontier {
						a := &acc[v]
						a.x += x[u]
						a.y += y[u]
						a.n++
						if same(u, v) {
							a.ox += x[u]
							a.oy += y[u]
							a.own++
						}
					}
				}
			case frontier:
				for _, u := range g.In(v) {
					if state[u] == open {
						a := &acc[u]
						a.x += x[v]
						a.y += y[v]
						a.n++
						if same(u, v) {
							a.ox += x[v]
							a.oy += y[v]
							a.own++
						}
					}
				}
			}
		}
		placed := 0
		for v := range n {
			if state[v] == frontier {
				state[v] = other
			}
			if a := acc[v]; a.n > 0 {
				dx, dy := disk(key(uint32(v)), seed, jitter)
				if a.own > 0 {
					a.x, a.y, a.n = a.ox, a.oy, a.own
				}
				// Written after the pass over all edges: a wave never
				// sees its own placements.
				x[v] = a.x/float64(a.n) + dx
				y[v] = a.y/float64(a.n) + dy
				acc[v] = sums{}
				state[v] = frontier
				placed++
			}
		}
		total += placed
		if placed == 0 {
			break
		}
	}
	return total
}
