package layout

import "math"

// quadtree is a Barnes–Hut tree over weighted points, rebuilt every
// iteration by one goroutine (so that it is the same for any number of
// workers) and then read by all of them.
//
// Hand-written rather than taken from a library because this is where the
// layout spends its time: cells are stored in depth-first order in one
// slice, each with the index of the cell after its subtree (next), so a
// traversal is a loop over the slice with no stack and no pointers, and a
// leaf's points are copied next to each other in body order.
type quadtree struct {
	treePart
	parts  [4]treePart // the root's quarters while they are built
	perm   []int32     // body order: leaves own contiguous runs
	tmp    []int32     // scratch for partitioning
	quads  []uint8     // scratch: each body's quadrant
	bodies []body      // in body order
}

// body is one point of a leaf: position, mass and node.
type body struct {
	x, y, m float64
	i       int32
}

// vec is a node's position (or force): x and y side by side, so that
// reading a neighbour's position touches one cache line.
type vec struct{ x, y float64 }

type cell struct {
	x, y, mass float64 // centre of mass and total mass
	x0, y0     float64 // the cell's square: lower corner and side
	side       float64
	next       int32 // the cell after this subtree
	lo, hi     int32 // a leaf's bodies: perm[lo:hi]; lo == hi for inner cells
}

const (
	leafBodies = 16 // a cell with this many bodies or fewer is a leaf
	maxDepth   = 48 // deeper cells are leaves whatever they hold (points at one spot)
)

// build makes the tree of points pos[i] with masses m[i]. The four
// quarters under the root are built on up to workers goroutines, each into
// its own slice of cells, then put one after the other: the same tree,
// cell for cell, as one goroutine would make.
func (t *quadtree) build(pos []vec, m []float64, workers int) {
	n := len(pos)
	t.cells, t.leaves = t.cells[:0], t.leaves[:0]
	if cap(t.perm) < n {
		t.perm = make([]int32, n)
		t.tmp = make([]int32, n)
		t.quads = make([]uint8, n)
		t.bodies = make([]body, n)
	}
	t.perm, t.tmp, t.quads, t.bodies = t.perm[:n], t.tmp[:n], t.quads[:n], t.bodies[:n]
	if n == 0 {
		return
	}
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for i := range n {
		t.perm[i] = int32(i)
		minX, maxX = min(minX, pos[i].x), max(maxX, pos[i].x)
		minY, maxY = min(minY, pos[i].y), max(maxY, pos[i].y)
	}
	side := max(maxX-minX, maxY-minY)
	side = side*(1+1e-9) + 1e-9 // every point strictly inside
	if n <= leafBodies {
		t.split(&t.treePart, pos, m, 0, int32(n), minX, minY, side, 0)
	} else {
		t.cells = append(t.cells, cell{x0: minX, y0: minY, side: side})
		half := side / 2
		start := t.partition(pos, 0, int32(n), minX+half, minY+half)
		forChunks(4*chunkNodes, min(workers, 4), func(q, _, _ int) {
			a, b := start[q], start[q+1]
			if a == b {
				return
			}
			cx, cy := quarter(q, minX, minY, half)
			part := &t.parts[q]
			part.cells, part.leaves = part.cells[:0], part.leaves[:0]
			t.split(part, pos, m, a, b, cx, cy, half, 1)
		})
		var sx, sy, sm float64
		for q := range 4 {
			if start[q] == start[q+1] {
				continue
			}
			off := int32(len(t.cells))
			part := &t.parts[q]
			for _, c := range part.cells {
				c.next += off
				t.cells = append(t.cells, c)
			}
			for _, l := range part.leaves {
				t.leaves = append(t.leaves, l+off)
			}
			c := &t.cells[off]
			sx += c.x * c.mass
			sy += c.y * c.mass
			sm += c.mass
		}
		root := &t.cells[0]
		root.x, root.y, root.mass = sx/sm, sy/sm, sm
		root.next = int32(len(t.cells))
	}
	forChunks(n, workers, func(_, lo, hi int) {
		for k := lo; k < hi; k++ {
			i := t.perm[k]
			t.bodies[k] = body{pos[i].x, pos[i].y, m[i], i}
		}
	})
}

// treePart is cells in depth-first order and the indices of the leaves
// among them: the whole tree, or one quarter of it while it is built.
type treePart struct {
	cells  []cell
	leaves []int32
}

// quarter is the lower corner of quarter q (bit 0: east, bit 1: north) of
// the square at (x0, y0) whose half side is half.
func quarter(q int, x0, y0, half float64) (float64, float64) {
	if q&1 != 0 {
		x0 += half
	}
	if q&2 != 0 {
		y0 += half
	}
	return x0, y0
}

// partition sorts perm[lo:hi] by quarter around (mx, my), stably (so the
// order is the same every time), and returns where each quarter starts:
// quarter q is perm[start[q]:start[q+1]].
func (t *quadtree) partition(pos []vec, lo, hi int32, mx, my float64) (start [5]int32) {
	var count [5]int32
	quads := t.quads[lo:hi]
	for k, i := range t.perm[lo:hi] {
		q := 0
		if pos[i].x >= mx {
			q = 1
		}
		if pos[i].y >= my {
			q += 2
		}
		quads[k] = uint8(q)
		count[q+1]++
	}
	for q := 1; q <= 4; q++ {
		count[q] += count[q-1]
	}
	for q := range 5 {
		start[q] = lo + count[q]
	}
	for k, i := range t.perm[lo:hi] {
		q := quads[k]
		t.tmp[lo+count[q]] = i
		count[q]++
	}
	copy(t.perm[lo:hi], t.tmp[lo:hi])
	return start
}

// split appends to part the cell of bodies perm[lo:hi], which lie in the
// square at (x0, y0) of the given side, and its subtree.
func (t *quadtree) split(part *treePart, pos []vec, m []float64, lo, hi int32, x0, y0, side float64, depth int) {
	idx := len(part.cells)
	part.cells = append(part.cells, cell{x0: x0, y0: y0, side: side})
	if hi-lo <= leafBodies || depth >= maxDepth {
		var sx, sy, sm float64
		for _, i := range t.perm[lo:hi] {
			sx += pos[i].x * m[i]
			sy += pos[i].y * m[i]
			sm += m[i]
		}
		c := &part.cells[idx]
		c.x, c.y, c.mass = sx/sm, sy/sm, sm
		c.lo, c.hi = lo, hi
		c.next = int32(len(part.cells))
		part.leaves = append(part.leaves, int32(idx))
		return
	}
	half := side / 2
	start := t.partition(pos, lo, hi, x0+half, y0+half)
	var sx, sy, sm float64
	for q := range 4 {
		a, b := start[q], start[q+1]
		if a == b {
			continue
		}
		child := len(part.cells)
		cx, cy := quarter(q, x0, y0, half)
		t.split(part, pos, m, a, b, cx, cy, half, depth+1)
		c := &part.cells[child]
		sx += c.x * c.mass
		sy += c.y * c.mass
		sm += c.mass
	}
	c := &part.cells[idx]
	c.x, c.y, c.mass = sx/sm, sy/sm, sm
	c.next = int32(len(part.cells))
}

// leafRepulsion adds the repulsion on every body of leaf cell l to
// out[body] (which must start at zero). Each body is pushed away from
// every other with k·m·m'/d (ForceAtlas2's repulsion). The tree is
// walked once for the whole leaf, a cell counting as one body when its
// side is below theta times its distance to the nearest point of the
// leaf's square, so that the approximation holds for every body in the
// leaf. The leaf's ancestors are always opened (in depth-first order they
// are the cells j < l whose subtree reaches past l), so that no body
// pushes itself. Bodies within one leaf push each other exactly.
func (t *quadtree) leafRepulsion(l int32, k, theta2 float64, out []vec) {
	cells := t.cells
	leaf := &cells[l]
	own := t.bodies[leaf.lo:leaf.hi]
	lx0, ly0, lx1, ly1 := leaf.x0, leaf.y0, leaf.x0+leaf.side, leaf.y0+leaf.side
	for a := range own {
		p := &own[a]
		var fx, fy float64
		for b := range own {
			q := &own[b]
			ex, ey := p.x-q.x, p.y-q.y
			if e2 := ex*ex + ey*ey; e2 > 0 {
				f := k * p.m * q.m / e2
				fx += ex * f
				fy += ey * f
			}
		}
		out[p.i].x += fx
		out[p.i].y += fy
	}
	for j := int32(0); j < int32(len(cells)); {
		c := &cells[j]
		if j == l {
			j = c.next
			continue
		}
		if j < l && l < c.next { // an ancestor
			j++
			continue
		}
		dx := max(lx0-c.x, 0, c.x-lx1)
		dy := max(ly0-c.y, 0, c.y-ly1)
		if d2 := dx*dx + dy*dy; c.side*c.side < theta2*d2 {
			km := k * c.mass
			for a := range own {
				p := &own[a]
				ex, ey := p.x-c.x, p.y-c.y
				f := km * p.m / (ex*ex + ey*ey)
				out[p.i].x += ex * f
				out[p.i].y += ey * f
			}
			j = c.next
			continue
		}
		if c.lo != c.hi {
			other := t.bodies[c.lo:c.hi]
			for a := range own {
				p := &own[a]
				var fx, fy float64
				for b := range other {
					q := &other[b]
					ex, ey := p.x-q.x, p.y-q.y
					if e2 := ex*ex + ey*ey; e2 > 0 {
						f := k * p.m * q.m / e2
						fx += ex * f
						fy += ey * f
					}
				}
				out[p.i].x += fx
				out[p.i].y += fy
			}
			j = c.next
			continue
		}
		j++
	}
}
