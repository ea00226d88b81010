package layout

import (
	"fmt"
	"math"
	"testing"

	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/rank"
)

// placeEveryEdge is Place as it was first written: every wave a pass over
// every edge. Place skips the rows that cannot matter; the result must be
// the same bit for bit.
func placeEveryEdge(g *rank.CSR, x, y []float64, want func(v uint32) bool, key func(v uint32) uint64, jitter float64, seed uint64, community func(uint32) int32) int {
	n := g.N
	sx, sy, cnt := make([]float64, n), make([]float64, n), make([]uint32, n)
	ox, oy, own := make([]float64, n), make([]float64, n), make([]uint32, n)
	same := func(a, b uint32) bool { return community != nil && community(a) >= 0 && community(a) == community(b) }
	open := func(v uint32) bool { return math.IsNaN(x[v]) && want(v) }
	total := 0
	for range maxPlaceWaves {
		for v := range n {
			vPlaced := !math.IsNaN(x[v])
			vOpen := !vPlaced && want(v)
			for _, u := range g.In(v) {
				if vOpen && !math.IsNaN(x[u]) {
					sx[v] += x[u]
					sy[v] += y[u]
					cnt[v]++
					if same(u, v) {
						ox[v] += x[u]
						oy[v] += y[u]
						own[v]++
					}
				} else if vPlaced && open(u) {
					sx[u] += x[v]
					sy[u] += y[v]
					cnt[u]++
					if same(u, v) {
						ox[u] += x[v]
						oy[u] += y[v]
						own[u]++
					}
				}
			}
		}
		placed := 0
		for v := range n {
			if c := cnt[v]; c > 0 {
				dx, dy := disk(key(v), seed, jitter)
				if own[v] > 0 {
					sx[v], sy[v], c = ox[v], oy[v], own[v]
				}
				x[v], y[v] = sx[v]/float64(c)+dx, sy[v]/float64(c)+dy
				sx[v], sy[v], cnt[v] = 0, 0, 0
				ox[v], oy[v], own[v] = 0, 0, 0
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

// TestPlaceSameAsEveryEdge: Place gives what a pass over every edge in
// every wave gives, bit for bit, on a sparse graph where some nodes are
// several waves away and some are never reached, without communities and
// with (a node joining its own community's placed neighbours).
func TestPlaceSameAsEveryEdge(t *testing.T) {
	for _, withComm := range []bool{false, true} {
		t.Run(fmt.Sprintf("communities %v", withComm), func(t *testing.T) { testPlaceSameAsEveryEdge(t, withComm) })
	}
}

func testPlaceSameAsEveryEdge(t *testing.T, withComm bool) {
	gen, src, dst := generatedEdges(t, graphgen.Config{Domains: 6000, Edges: 9000, Seed: 11, Communities: 7})
	g, err := rank.BuildCSR(uint32(gen.Domains()), src, dst, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := gen.Domains()
	key := func(v uint32) uint64 { return uint64(v) * 0x9e3779b97f4a7c15 }
	want := func(v uint32) bool { return v%5 != 0 } // every fifth node unranked
	var community func(uint32) int32
	if withComm {
		community = func(v uint32) int32 { return int32(gen.Community(v)) - 1 } // community 0: none
	}
	run := func(place func(*rank.CSR, []float64, []float64, func(uint32) bool, func(uint32) uint64, float64, uint64, func(uint32) int32) int) ([]float64, []float64, int) {
		x, y := make([]float64, n), make([]float64, n)
		for v := range n {
			x[v], y[v] = math.NaN(), math.NaN()
			if v%97 == 1 { // the laid-out nodes
				x[v], y[v] = square(key(uint32(v)), 3, 100)
			}
		}
		k := place(g, x, y, want, key, 0.7, 3, community)
		return x, y, k
	}
	x0, y0, k0 := run(placeEveryEdge)
	x1, y1, k1 := run(Place)
	if k0 != k1 {
		t.Fatalf("Place placed %d, every edge %d", k1, k0)
	}
	unplaced := 0
	for v := range n {
		if math.Float64bits(x0[v]) != math.Float64bits(x1[v]) || math.Float64bits(y0[v]) != math.Float64bits(y1[v]) {
			t.Fatalf("node %d: Place (%v, %v), every edge (%v, %v)", v, x1[v], y1[v], x0[v], y0[v])
		}
		if math.IsNaN(x1[v]) && want(uint32(v)) {
			unplaced++
		}
	}
	if withComm { // the communities change where some nodes go
		community = nil
		x2, _, _ := run(Place)
		moved := 0
		for v := range n {
			if !math.IsNaN(x1[v]) && x1[v] != x2[v] {
				moved++
			}
		}
		if moved == 0 {
			t.Error("the same positions with communities as without")
		}
	}
	t.Logf("placed %d, %d wanted left unplaced", k1, unplaced)
	if k1 == 0 || unplaced == 0 {
		t.Errorf("placed %d, left %d: want both some placed and some out of reach", k1, unplaced)
	}
}
