package layout

import (
	"math"
	"slices"
	"testing"
)

// TestQuadtree: every body is in exactly one leaf, inside its square;
// each cell's mass is its bodies'; the tree is the same built by one
// goroutine or several; the repulsion matches the exact sum closely.
func TestQuadtree(t *testing.T) {
	const n = 3000
	pos := make([]vec, n)
	m := make([]float64, n)
	for i := range n {
		x, y := square(uint64(i), 9, 100)
		if i%10 == 0 { // a dense clump
			x, y = x/50, y/50
		}
		pos[i], m[i] = vec{x, y}, float64(1+i%7)
	}
	pos[5] = pos[6] // two bodies at one spot
	var one, many quadtree
	one.build(pos, m, 1)
	many.build(pos, m, 3)
	if !slices.Equal(one.cells, many.cells) || !slices.Equal(one.leaves, many.leaves) || !slices.Equal(one.bodies, many.bodies) {
		t.Fatal("the tree depends on the number of workers")
	}
	seen := make([]int, n)
	for _, l := range one.leaves {
		c := one.cells[l]
		var mass float64
		for _, b := range one.bodies[c.lo:c.hi] {
			seen[b.i]++
			mass += b.m
			if b.x < c.x0 || b.x >= c.x0+c.side || b.y < c.y0 || b.y >= c.y0+c.side {
				t.Errorf("body %d at (%v, %v) outside its leaf %+v", b.i, b.x, b.y, c)
			}
		}
		if math.Abs(mass-c.mass) > 1e-9*mass {
			t.Errorf("leaf %d: mass %v, bodies %v", l, c.mass, mass)
		}
	}
	for i, k := range seen {
		if k != 1 {
			t.Fatalf("body %d in %d leaves", i, k)
		}
	}
	var total float64
	for _, x := range m {
		total += x
	}
	if root := one.cells[0]; math.Abs(root.mass-total) > 1e-9*total || root.next != int32(len(one.cells)) {
		t.Errorf("root %+v, want mass %v and next %d", root, total, len(one.cells))
	}

	force := make([]vec, n)
	for _, l := range one.leaves {
		one.leafRepulsion(l, 1, 1.2*1.2, force)
	}
	var errSum, sum float64
	for i := 0; i < n; i += 37 {
		var fx, fy float64
		for j := range n {
			dx, dy := pos[i].x-pos[j].x, pos[i].y-pos[j].y
			if d2 := dx*dx + dy*dy; d2 > 0 {
				fx += dx * m[i] * m[j] / d2
				fy += dy * m[i] * m[j] / d2
			}
		}
		errSum += math.Hypot(force[i].x-fx, force[i].y-fy)
		sum += math.Hypot(fx, fy)
	}
	if rel := errSum / sum; rel > 0.05 {
		t.Errorf("Barnes–Hut repulsion off the exact sum by %.3f on average", rel)
	} else {
		t.Logf("Barnes–Hut repulsion off the exact sum by %.4f on average", rel)
	}
}
