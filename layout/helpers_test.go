package layout

import (
	"cmp"
	"math"
	"slices"
	"testing"

	"github.com/mapthenet/mapthenet/graphgen"
)

// meanDisplacement is the mean distance between two layouts' positions
// over the nodes placed in both.
func meanDisplacement(x0, y0, x1, y1 []float64) float64 {
	var sum float64
	var n int
	for i := range x0 {
		if math.IsNaN(x0[i]) || math.IsNaN(x1[i]) {
			continue
		}
		sum += math.Hypot(x1[i]-x0[i], y1[i]-y0[i])
		n++
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// communityDistances is the mean distance of a placed node to the centre
// of its own community and to the nearest centre of another, over the n
// placed nodes: how well a layout keeps planted communities apart.
func communityDistances(x, y []float64, k int, community func(uint32) int) (own, other float64, n int) {
	cx, cy, cn := make([]float64, k), make([]float64, k), make([]int, k)
	for v := range x {
		if math.IsNaN(x[v]) {
			continue
		}
		c := community(uint32(v))
		cx[c] += x[v]
		cy[c] += y[v]
		cn[c]++
	}
	for c := range k {
		cx[c] /= float64(max(cn[c], 1))
		cy[c] /= float64(max(cn[c], 1))
	}
	for v := range x {
		if math.IsNaN(x[v]) {
			continue
		}
		c := community(uint32(v))
		own += math.Hypot(x[v]-cx[c], y[v]-cy[c])
		nearest := math.Inf(1)
		for d := range k {
			if d != c && cn[d] > 0 {
				nearest = min(nearest, math.Hypot(x[v]-cx[d], y[v]-cy[d]))
			}
		}
		other += nearest
		n++
	}
	return own / float64(max(n, 1)), other / float64(max(n, 1)), n
}

// generatedEdges is a generated graph and its edges as (src, dst) id lists.
func generatedEdges(t testing.TB, cfg graphgen.Config) (gen *graphgen.Generator, src, dst []uint32) {
	t.Helper()
	gen, err := graphgen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gen.Edges(func(s, d uint32, nofollow bool) error {
		src, dst = append(src, s), append(dst, d)
		return nil
	})
	return gen, src, dst
}

// knnPurity is how well a layout keeps communities together: over the
// placed nodes with a community (comm[v] >= 0), the mean share of each
// one's k nearest placed nodes on the map that are of its community. A
// random placement scores about Σ (community share)²; communities drawn
// as separate regions score near 1. Nearest neighbours are found on a
// grid of about two nodes a cell.
func knnPurity(x, y []float64, comm []int32, k int) float64 {
	var pts []int
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for v := range x {
		if math.IsNaN(x[v]) {
			continue
		}
		pts = append(pts, v)
		minX, maxX = min(minX, x[v]), max(maxX, x[v])
		minY, maxY = min(minY, y[v]), max(maxY, y[v])
	}
	if len(pts) <= k {
		return 0
	}
	side := math.Sqrt(max((maxX-minX)*(maxY-minY), 1e-9) * 2 / float64(len(pts)))
	cols, rows := int((maxX-minX)/side)+1, int((maxY-minY)/side)+1
	cell := func(v int) (int, int) { return int((x[v] - minX) / side), int((y[v] - minY) / side) }
	grid := make([][]int, cols*rows)
	for _, v := range pts {
		cx, cy := cell(v)
		grid[cy*cols+cx] = append(grid[cy*cols+cx], v)
	}
	type near struct {
		d float64
		v int
	}
	var sum float64
	var counted int
	var cand []near
	for _, v := range pts {
		if comm[v] < 0 {
			continue
		}
		cx, cy := cell(v)
		cand = cand[:0]
		for r := 0; ; r++ {
			for gy := cy - r; gy <= cy+r; gy++ {
				for gx := cx - r; gx <= cx+r; gx++ {
					if gx < 0 || gy < 0 || gx >= cols || gy >= rows || (max(abs(gx-cx), abs(gy-cy)) != r) {
						continue
					}
					for _, u := range grid[gy*cols+gx] {
						if u != v {
							cand = append(cand, near{math.Hypot(x[u]-x[v], y[u]-y[v]), u})
						}
					}
				}
			}
			if len(cand) >= k {
				slices.SortFunc(cand, func(a, b near) int { return cmp.Compare(a.d, b.d) })
				// Every point outside the rings searched is at least r·side away.
				if cand[k-1].d <= float64(r)*side || r > cols+rows {
					break
				}
			}
		}
		same := 0
		for _, c := range cand[:k] {
			if comm[c.v] == comm[v] {
				same++
			}
		}
		sum += float64(same) / float64(k)
		counted++
	}
	return sum / float64(max(counted, 1))
}

func abs(a int) int {
	if a < 0 {
		return -a
	}
	return a
}
