package layout

import (
	"math"
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
