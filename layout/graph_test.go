package layout

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/mapthenet/mapthenet/rank"
)

func csrOf(t *testing.T, n uint32, edges [][2]uint32) *rank.CSR {
	t.Helper()
	var src, dst []uint32
	for _, e := range edges {
		src, dst = append(src, e[0]), append(dst, e[1])
	}
	g, err := rank.BuildCSR(n, src, dst, 1)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestInduced: both directions become one undirected edge; edges leaving
// the chosen nodes are dropped; node i of the result is nodes[i].
func TestInduced(t *testing.T) {
	g := csrOf(t, 6, [][2]uint32{{0, 1}, {1, 0}, {1, 2}, {2, 5}, {3, 0}, {5, 1}, {4, 4}})
	sub, index, err := Induced(g, []uint32{5, 1, 0, 2})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]uint32{0: {1, 3}, 1: {0, 2, 3}, 2: {1}, 3: {0, 1}} // 5–1, 5–2, 1–0, 1–2
	for i, w := range want {
		if got := sub.Neighbours(i); !slices.Equal(got, w) {
			t.Errorf("node %d: neighbours %v, want %v", i, got, w)
		}
	}
	if sub.NumEdges() != 4 {
		t.Errorf("%d edges, want 4", sub.NumEdges())
	}
	if !slices.Equal(index, []int32{2, 1, 3, -1, -1, 0}) {
		t.Errorf("index %v", index)
	}
	for _, bad := range [][]uint32{{1, 1}, {6}} {
		if _, _, err := Induced(g, bad); err == nil {
			t.Errorf("Induced(%v): no error", bad)
		}
	}
}

func TestFromEdges(t *testing.T) {
	g, err := FromEdges(4, []uint32{0, 1, 2, 3}, []uint32{1, 0, 2, 0})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(g.Offsets, []uint32{0, 2, 3, 3, 4}) || !slices.Equal(g.Adj, []uint32{1, 3, 0, 0}) {
		t.Errorf("offsets %v adj %v", g.Offsets, g.Adj)
	}
	if _, err := FromEdges(2, []uint32{0}, []uint32{2}); err == nil {
		t.Error("edge outside the graph: no error")
	}
	if _, err := FromEdges(2, []uint32{0}, nil); err == nil {
		t.Error("unequal ends: no error")
	}
}

// TestFingerprint: the same graph under another numbering has the same
// fingerprint; one edge more, or other parameters, another.
func TestFingerprint(t *testing.T) {
	keys := []uint64{Key("a"), Key("b"), Key("c"), Key("d")}
	g1, _ := FromEdges(4, []uint32{0, 1, 2}, []uint32{1, 2, 3})
	// Renumbered: new i is old perm[i].
	perm := []int{3, 1, 0, 2}
	inv := make([]uint32, 4)
	pkeys := make([]uint64, 4)
	for i, o := range perm {
		inv[o] = uint32(i)
		pkeys[i] = keys[o]
	}
	g2, _ := FromEdges(4, []uint32{inv[1], inv[2], inv[3]}, []uint32{inv[0], inv[1], inv[2]})
	g3, _ := FromEdges(4, []uint32{0, 1, 2, 0}, []uint32{1, 2, 3, 3})
	f1 := Fingerprint(g1, keys, Params{})
	if f2 := Fingerprint(g2, pkeys, Params{Workers: 7}); f2 != f1 {
		t.Errorf("renumbered: %x, want %x", f2, f1)
	}
	if f3 := Fingerprint(g3, keys, Params{}); f3 == f1 {
		t.Error("one more edge: same fingerprint")
	}
	if f4 := Fingerprint(g1, keys, Params{Seed: 2}); f4 == f1 {
		t.Error("another seed: same fingerprint")
	}
	if f5 := Fingerprint(g1, keys, Params{Budget: 1000}); f5 == f1 {
		t.Error("another budget: same fingerprint")
	}
	withComm := *g1
	withComm.Community = []int32{0, 0, 1, 1}
	fc := Fingerprint(&withComm, keys, Params{})
	if fc == f1 {
		t.Error("communities: same fingerprint")
	}
	withComm.Community = []int32{0, 1, 1, 1}
	if f6 := Fingerprint(&withComm, keys, Params{}); f6 == fc {
		t.Error("other communities: same fingerprint")
	}
	if f7 := Fingerprint(g1, keys, Params{Between: 0.5}); f7 == f1 {
		t.Error("another between: same fingerprint")
	}
	if h, err := ParseFingerprint(FormatFingerprint(f1)); err != nil || h != f1 {
		t.Errorf("round trip: %x, %v", h, err)
	}
	for _, bad := range []string{"", "12", "zzzzzzzzzzzzzzzz", "+123456789abcdef", "0123456789abcdef0"} {
		if _, err := ParseFingerprint(bad); err == nil {
			t.Errorf("ParseFingerprint(%q): no error", bad)
		}
	}
}

// TestPlaceWaves: a chain hanging off a laid-out node is placed link by
// link; a ranked node with no path to a placed one and an unwanted node
// stay unplaced.
func TestPlaceWaves(t *testing.T) {
	// 0 placed; 0 → 1 → 2, 3 → 2 (chain of three waves via 1, 2, 3);
	// 4 ⇄ 5 apart; 6 unwanted, linked from 0.
	g := csrOf(t, 7, [][2]uint32{{0, 1}, {1, 2}, {3, 2}, {4, 5}, {5, 4}, {0, 6}})
	nan := math.NaN()
	x := []float64{10, nan, nan, nan, nan, nan, nan}
	y := []float64{-5, nan, nan, nan, nan, nan, nan}
	want := func(v uint32) bool { return v != 6 }
	n := Place(g, x, y, want, func(v uint32) uint64 { return uint64(v) }, 0.5, 1, nil)
	if n != 3 {
		t.Errorf("placed %d, want 3", n)
	}
	for v := range 7 {
		placed := !math.IsNaN(x[v])
		if placed != (v <= 3) {
			t.Errorf("node %d placed %v", v, placed)
		}
		if placed && math.Hypot(x[v]-10, y[v]+5) > 0.5*float64(v)+1e-9 {
			t.Errorf("node %d at (%v, %v): more than %d jitters from node 0", v, x[v], y[v], v)
		}
	}
}

func TestRunRejects(t *testing.T) {
	g, _ := FromEdges(2, []uint32{0}, []uint32{1})
	keys := []uint64{1, 2}
	cases := map[string]struct {
		keys  []uint64
		start Start
		p     Params
	}{
		"keys":       {keys: keys[:1]},
		"start size": {keys: keys, start: Start{X: []float64{0}, Y: []float64{0}, Known: []bool{true}}},
		"NaN start":  {keys: keys, start: Start{X: []float64{math.NaN(), 0}, Y: []float64{0, 0}, Known: []bool{true, true}}},
		"theta":      {keys: keys, p: Params{Theta: -1}},
		"iterations": {keys: keys, p: Params{Iterations: -1}},
	}
	for name, c := range cases {
		if _, _, _, err := Run(context.Background(), g, c.keys, c.start, c.p); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, _, err := Run(ctx, g, keys, Start{}, Params{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// TestRunEmptyAndTiny: no nodes, one node, two linked nodes.
func TestRunEmptyAndTiny(t *testing.T) {
	for n := range 3 {
		var a, b []uint32
		if n == 2 {
			a, b = []uint32{0}, []uint32{1}
		}
		g, _ := FromEdges(n, a, b)
		keys := make([]uint64, n)
		for i := range keys {
			keys[i] = Key(string(rune('a' + i)))
		}
		x, y, st, err := Run(context.Background(), g, keys, Start{}, Params{Iterations: 20})
		if err != nil || len(x) != n || len(y) != n {
			t.Fatalf("%d nodes: %v, %d/%d positions", n, err, len(x), len(y))
		}
		for i := range x {
			if math.IsNaN(x[i]) || math.IsInf(x[i], 0) || math.IsNaN(y[i]) || math.IsInf(y[i], 0) {
				t.Errorf("%d nodes: node %d at (%v, %v); %+v", n, i, x[i], y[i], st)
			}
		}
	}
}
