package layout

import (
	"context"
	"fmt"
	"math"
	"runtime"
)

// Params are the layout's parameters. A zero field takes DefaultParams'
// value.
type Params struct {
	// Iterations of a cold start (no previous positions); of its
	// coarsest level when it is multilevel (see Budget).
	Iterations int
	// WarmIterations of a warm start (previous positions known), and the
	// most that a finer level of a multilevel cold start gets.
	WarmIterations int
	// WarmSpeed is a warm start's initial global speed (a cold start's is
	// ForceAtlas2's 1): low, so that a settled layout is only nudged. The
	// finer levels of a multilevel cold start also start at it.
	WarmSpeed float64
	// Theta is the Barnes–Hut opening criterion: a cell whose side is
	// below Theta times its distance counts as one body.
	Theta float64
	// Scaling is ForceAtlas2's repulsion constant (kr); Gravity pulls
	// every node toward the origin, so that parts not linked to the rest
	// stay near it (kg).
	Scaling float64
	Gravity float64
	// LinLog uses log(1+d) attraction instead of d: tighter clusters.
	LinLog bool
	// Between is the attraction along a link between two communities as
	// a share of that along a link within one (see Graph.Community), in
	// (0, 1]: lower keeps communities further apart.
	Between float64
	// Jitter is the radius, as a share of the mean edge length, of the
	// disk around their neighbours' mean that nodes placed without the
	// force simulation are spread over.
	Jitter float64
	// Seed changes every initial position and jitter.
	Seed uint64
	// Budget bounds the work of one Run, in units of about one node's
	// share of one iteration (an iteration over n nodes and m edges costs
	// n + m/32): iterations beyond it are not run, and a cold start too
	// big for it is multilevel (see plan). Negative: no bound.
	Budget int64
	// Workers computing forces; 0: GOMAXPROCS. The result is the same
	// for any value.
	Workers int
}

// DefaultParams are ForceAtlas2's defaults for large graphs (scaling 2,
// gravity 1) with a Barnes–Hut theta of 1.6 rather than 1.2 (a quarter
// less time an iteration; on 200,000 nodes with planted communities the
// same separation for the same work), 150 cold and 50 warm iterations for
// graphs that fit the budget, and a budget that lays out 200,000 nodes in
// a few seconds on two cores.
var DefaultParams = Params{
	Iterations:     150,
	WarmIterations: 50,
	WarmSpeed:      0.05,
	Theta:          1.6,
	Scaling:        2,
	Gravity:        1,
	Jitter:         0.3,
	Between:        0.2,
	Seed:           1,
	Budget:         defaultBudget,
}

func (p Params) withDefaults() (Params, error) {
	d := DefaultParams
	if p.Iterations == 0 {
		p.Iterations = d.Iterations
	}
	if p.WarmIterations == 0 {
		p.WarmIterations = d.WarmIterations
	}
	if p.WarmSpeed == 0 {
		p.WarmSpeed = d.WarmSpeed
	}
	if p.Theta == 0 {
		p.Theta = d.Theta
	}
	if p.Scaling == 0 {
		p.Scaling = d.Scaling
	}
	if p.Gravity == 0 {
		p.Gravity = d.Gravity
	}
	if p.Jitter == 0 {
		p.Jitter = d.Jitter
	}
	if p.Between == 0 {
		p.Between = d.Between
	}
	if p.Seed == 0 {
		p.Seed = d.Seed
	}
	if p.Budget == 0 {
		p.Budget = d.Budget
	}
	if p.Workers <= 0 {
		p.Workers = runtime.GOMAXPROCS(0)
	}
	switch {
	case p.Iterations < 0 || p.WarmIterations < 0:
		return p, fmt.Errorf("layout: negative iterations (%d, warm %d)", p.Iterations, p.WarmIterations)
	case !(p.Theta > 0) || !(p.Scaling > 0) || !(p.Gravity > 0) || !(p.Jitter > 0) || !(p.WarmSpeed > 0):
		return p, fmt.Errorf("layout: theta, scaling, gravity, jitter and warm speed must be positive: %+v", p)
	case !(p.Between > 0 && p.Between <= 1):
		return p, fmt.Errorf("layout: between %v: want a share in (0, 1]", p.Between)
	}
	return p, nil
}

// Start is where Run begins. Known[i] says whether (X[i], Y[i]) is node
// i's previous position; nil Known (or none known) is a cold start.
type Start struct {
	X, Y  []float64
	Known []bool
}

// RunStats describe one Run.
type RunStats struct {
	Nodes, Edges int
	Known        int     // nodes that started from a previous position
	Warm         bool    // started from previous positions
	Iterations   int     // over all the nodes (the last level)
	Levels       int     // 1, or more for a multilevel cold start
	Work         int64   // work units spent (see Params.Budget)
	Speed        float64 // the final global speed
}

// Run lays out g with ForceAtlas2 and returns every node's position.
// keys[i] is node i's stable key (Key of its name): it seeds the initial
// position of a node with no previous one and no placed neighbour. ctx is
// checked between iterations.
//
// Cold start: every node at a point drawn from its key, uniform in a
// square whose side grows with the square root of the node count, then
// p.Iterations iterations. Warm start: known nodes at their previous
// positions; the others at the mean of their known neighbours (then of
// the neighbours placed so, and so on) with a small jitter, or at a point
// drawn from the key within the previous layout's extent; then
// p.WarmIterations iterations starting at the low speed p.WarmSpeed.
//
// Either is cut to what p.Budget pays for. A cold start too big for it is
// multilevel: the first nodes of g (so g's nodes should come best ranked
// first, as Map gives them) are laid out cold, and each bigger prefix
// starts from the smaller one's layout as a warm start would, with few
// iterations (see plan).
func Run(ctx context.Context, g *Graph, keys []uint64, start Start, p Params) (x, y []float64, st RunStats, err error) {
	p, err = p.withDefaults()
	if err != nil {
		return nil, nil, st, err
	}
	n := g.N()
	if len(keys) != n {
		return nil, nil, st, fmt.Errorf("layout: %d keys for %d nodes", len(keys), n)
	}
	if g.Community != nil && len(g.Community) != n {
		return nil, nil, st, fmt.Errorf("layout: %d communities for %d nodes", len(g.Community), n)
	}
	if start.Known != nil && (len(start.Known) != n || len(start.X) != n || len(start.Y) != n) {
		return nil, nil, st, fmt.Errorf("layout: start has %d/%d/%d entries for %d nodes", len(start.X), len(start.Y), len(start.Known), n)
	}
	st.Nodes, st.Edges = n, g.NumEdges()
	x, y = make([]float64, n), make([]float64, n)
	for i := range start.Known {
		if start.Known[i] {
			if math.IsNaN(start.X[i]) || math.IsInf(start.X[i], 0) || math.IsNaN(start.Y[i]) || math.IsInf(start.Y[i], 0) {
				return nil, nil, st, fmt.Errorf("layout: node %d starts at (%v, %v)", i, start.X[i], start.Y[i])
			}
			st.Known++
		}
	}
	st.Warm = st.Known > 0
	if n == 0 {
		return x, y, st, nil
	}
	var sd *seeds
	if !st.Warm {
		// The communities' disks, paid for from the budget.
		sd, st.Work = seedCommunities(g, p)
		if p.Budget > 0 {
			p.Budget = max(1, p.Budget-st.Work)
		}
	}
	levels := plan(g, st.Warm, p)
	st.Levels = len(levels)
	if st.Warm {
		warmStart(g, keys, start, x, y, nil, p)
	} else {
		k := levels[0].n
		r := coldRadius(k)
		for i := range k {
			ok := false
			if g.Community != nil {
				x[i], y[i], ok = sd.point(g.Community[i], keys[i], p.Seed, k)
			}
			if !ok {
				x[i], y[i] = square(keys[i], p.Seed, r)
			}
		}
	}
	for li, lv := range levels {
		sub := prefix(g, lv.n)
		if li > 0 {
			refineStart(sub, keys[:lv.n], levels[li-1].n, x[:lv.n], y[:lv.n], sd, p)
		}
		s := newSim(sub, x, y, p)
		s.speed = lv.speed
		for range lv.iterations {
			if err := ctx.Err(); err != nil {
				return nil, nil, st, err
			}
			s.step()
		}
		for i, q := range s.pos {
			x[i], y[i] = q.x, q.y
		}
		st.Work += int64(lv.iterations) * work(lv.n, lv.edges)
		st.Iterations, st.Speed = lv.iterations, s.speed
	}
	return x, y, st, nil
}

// refineStart readies a finer level of a multilevel cold start: the first
// prev nodes (the coarser level's) spread out by the ratio of the levels'
// cold radii, since ForceAtlas2's layouts grow with the square root of
// their node count, and the others beside them as in a warm start (or in
// their community's disk of sd).
func refineStart(g *Graph, keys []uint64, prev int, x, y []float64, sd *seeds, p Params) {
	f := coldRadius(g.N()) / coldRadius(prev)
	known := make([]bool, g.N())
	for i := range prev {
		x[i] *= f
		y[i] *= f
		known[i] = true
	}
	warmStart(g, keys, Start{X: x, Y: y, Known: known}, x, y, sd, p)
}

// coldRadius is the half side of a cold start's square: about the extent
// ForceAtlas2 settles at with the default scaling, so that the first
// iterations untangle rather than inflate.
func coldRadius(n int) float64 { return 10 * math.Sqrt(float64(n)+1) }

// warmStart sets known nodes to their previous positions and the others
// beside their known neighbours (in waves; those of their own community,
// if any), else in their community's disk of sd, else beside their
// community's known members, else at a keyed point within the previous
// layout's extent.
func warmStart(g *Graph, keys []uint64, start Start, x, y []float64, sd *seeds, p Params) {
	n := g.N()
	placed := make([]bool, n)
	var extent float64
	for i := range n {
		if start.Known[i] {
			x[i], y[i], placed[i] = start.X[i], start.Y[i], true
			extent = max(extent, math.Abs(x[i]), math.Abs(y[i]))
		}
	}
	jitter := p.Jitter * meanEdgeLength(g, x, y, placed)
	cs := communityCentroids(g, x, y, placed)
	spreadWaves(g, keys, x, y, placed, jitter, p.Seed)
	for i := range n {
		if placed[i] {
			continue
		}
		if g.Community != nil {
			c := g.Community[i]
			if px, py, ok := sd.point(c, keys[i], p.Seed, n); ok {
				x[i], y[i] = px, py
				continue
			}
			if m := cs[c]; m != nil {
				dx, dy := disk(keys[i], p.Seed, max(m.spread, jitter))
				x[i], y[i] = m.x+dx, m.y+dy
				continue
			}
		}
		x[i], y[i] = square(keys[i], p.Seed, max(extent, 1))
	}
}

// meanEdgeLength is the mean length of the edges whose ends are both
// placed (1 when there are none), summed in node order.
func meanEdgeLength(g *Graph, x, y []float64, placed []bool) float64 {
	var sum float64
	var count int
	for i := range g.N() {
		if !placed[i] {
			continue
		}
		for _, j := range g.Neighbours(i) {
			if int(j) > i && placed[j] {
				sum += math.Hypot(x[i]-x[j], y[i]-y[j])
				count++
			}
		}
	}
	if count == 0 || sum == 0 {
		return 1
	}
	return sum / float64(count)
}

// spreadWaves places unplaced nodes at the mean of their placed
// neighbours (those of their own community, if any) plus a keyed jitter,
// in waves: a wave sees only the nodes placed before it, so the result
// does not depend on node order.
func spreadWaves(g *Graph, keys []uint64, x, y []float64, placed []bool, jitter float64, seed uint64) {
	var wave []int
	for {
		wave = wave[:0]
		var nx, ny []float64
		for i := range g.N() {
			if placed[i] {
				continue
			}
			var sx, sy, ox, oy float64
			var c, own int
			for _, j := range g.Neighbours(i) {
				if placed[j] {
					sx += x[j]
					sy += y[j]
					c++
					if g.Community != nil && g.Community[i] >= 0 && g.Community[j] == g.Community[i] {
						ox += x[j]
						oy += y[j]
						own++
					}
				}
			}
			if own > 0 {
				sx, sy, c = ox, oy, own
			}
			if c > 0 {
				dx, dy := disk(keys[i], seed, jitter)
				wave = append(wave, i)
				nx = append(nx, sx/float64(c)+dx)
				ny = append(ny, sy/float64(c)+dy)
			}
		}
		if len(wave) == 0 {
			return
		}
		for k, i := range wave {
			x[i], y[i], placed[i] = nx[k], ny[k], true
		}
	}
}

// sim is ForceAtlas2's state: forces of this and the previous iteration,
// and its adaptive global speed.
type sim struct {
	g                 *Graph
	pos               []vec
	mass              []float64
	w                 []float32 // attraction weight of each adjacency entry; nil: 1
	force, old        []vec     // force now and at the previous iteration
	swing, traction   []float64 // per chunk
	speed, efficiency float64
	p                 Params
	tree              quadtree
}

func newSim(g *Graph, x, y []float64, p Params) *sim {
	n := g.N()
	s := &sim{g: g, p: p, efficiency: 1, pos: make([]vec, n),
		mass: make([]float64, n), force: make([]vec, n), old: make([]vec, n),
		swing: make([]float64, nchunks(n)), traction: make([]float64, nchunks(n)),
	}
	for i := range n {
		s.pos[i] = vec{x[i], y[i]}
		s.mass[i] = float64(g.Degree(i) + 1)
	}
	s.w = attraction(g, p.Between)
	return s
}

// step is one ForceAtlas2 iteration (Jacomy et al. 2014, as Gephi's
// ForceAtlas2.goAlgo): forces, then the global speed from how much the
// nodes swing (change direction) against how much they travel, then each
// node moves by its force times speed/(1+sqrt(speed·its own swinging)).
func (s *sim) step() {
	n := s.g.N()
	s.tree.build(s.pos, s.mass, s.p.Workers)
	s.force, s.old = s.old, s.force
	theta2 := s.p.Theta * s.p.Theta
	kr, kg := s.p.Scaling, s.p.Gravity
	linlog := s.p.LinLog
	// Repulsion one leaf at a time: the bodies of a leaf share one walk
	// of the tree.
	clear(s.force)
	leaves := s.tree.leaves
	forChunks(len(leaves), s.p.Workers, func(_, lo, hi int) {
		for _, l := range leaves[lo:hi] {
			s.tree.leafRepulsion(l, kr, theta2, s.force)
		}
	})
	// Attraction and gravity in node order: the adjacency lists are read
	// front to back.
	forChunks(n, s.p.Workers, func(c, lo, hi int) {
		var swing, traction float64
		for i := lo; i < hi; i++ {
			xi, yi, mi := s.pos[i].x, s.pos[i].y, s.mass[i]
			fx, fy := s.force[i].x, s.force[i].y
			// Attraction along edges: d (or log(1+d)) toward each
			// neighbour, times the edge's weight.
			lo := s.g.Offsets[i]
			for e, j := range s.g.Neighbours(i) {
				dx, dy := s.pos[j].x-xi, s.pos[j].y-yi
				if linlog {
					d := math.Hypot(dx, dy)
					if d > 0 {
						f := math.Log1p(d) / d
						dx, dy = dx*f, dy*f
					}
				}
				if s.w != nil {
					w := float64(s.w[lo+uint32(e)])
					dx, dy = dx*w, dy*w
				}
				fx += dx
				fy += dy
			}
			// Gravity: kg·m toward the origin.
			if d := math.Hypot(xi, yi); d > 0 {
				f := kg * mi / d
				fx -= xi * f
				fy -= yi * f
			}
			s.force[i] = vec{fx, fy}
			o := s.old[i]
			swing += mi * math.Hypot(o.x-fx, o.y-fy)
			traction += mi * 0.5 * math.Hypot(o.x+fx, o.y+fy)
		}
		s.swing[c], s.traction[c] = swing, traction
	})
	s.adjustSpeed(sumInOrder(s.swing), sumInOrder(s.traction), n)
	speed := s.speed
	forChunks(n, s.p.Workers, func(_, lo, hi int) {
		for i := lo; i < hi; i++ {
			fc, o := s.force[i], s.old[i]
			swinging := s.mass[i] * math.Hypot(o.x-fc.x, o.y-fc.y)
			f := speed / (1 + math.Sqrt(speed*swinging))
			s.pos[i].x += fc.x * f
			s.pos[i].y += fc.y * f
		}
	})
}

// adjustSpeed is ForceAtlas2's global speed rule: aim for swinging below
// a tolerance times the useful travel, and change the speed by at most
// half of itself per iteration.
func (s *sim) adjustSpeed(swing, traction float64, n int) {
	if !(swing > 0) || !(traction > 0) {
		return // nothing moves: keep the speed
	}
	jitterTolerance := 1.0
	if n >= 50000 {
		jitterTolerance = 10
	} else if n < 5000 {
		jitterTolerance = 0.1
	}
	nf := float64(n)
	optimal := 0.05 * math.Sqrt(nf)
	jt := jitterTolerance * max(math.Sqrt(optimal), min(10, optimal*traction/(nf*nf)))
	const minEfficiency = 0.05
	if swing/traction > 2 {
		if s.efficiency > minEfficiency {
			s.efficiency *= 0.5
		}
		jt = max(jt, jitterTolerance)
	}
	target := jt * s.efficiency * traction / swing
	if swing > jt*traction {
		if s.efficiency > minEfficiency {
			s.efficiency *= 0.7
		}
	} else if s.speed < 1000 {
		s.efficiency *= 1.3
	}
	s.speed += min(target-s.speed, 0.5*s.speed)
}
