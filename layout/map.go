package layout

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/mapthenet/mapthenet/rank"
)

// MapInput is what Map lays out.
type MapInput struct {
	Graph *rank.CSR // the followed-edge graph (its direction is ignored)
	// Order lists the ranked nodes, best first (rank.Ranks' order). The
	// first Top are laid out (none when Top <= 0); the others are placed
	// beside them.
	Order []uint32
	Top   int
	// Key returns node v's stable key: Key(name of v).
	Key func(v uint32) uint64
	// Prev returns node v's position in the previous layout, if it had
	// one. Nil: a cold start.
	Prev func(v uint32) (x, y float64, ok bool)
	// PrevFingerprint is the previous layout's Fingerprint (0: unknown).
	PrevFingerprint uint64
	// Community returns node v's community (-1: none); nil: none known.
	Community func(v uint32) int32
}

// MapStats describe one Map.
type MapStats struct {
	RunStats
	Fingerprint    uint64 // of this layout's input: keep it for the next one
	Reused         bool   // the input was the previous one: previous positions kept
	ByLayout       int    // nodes laid out by the force simulation
	ByNeighbours   int    // ranked nodes placed beside their neighbours
	Unplaced       int    // ranked nodes left without a position
	MeanEdgeLength float64
}

// Map places the ranked nodes of in.Graph: the first in.Top of in.Order
// by Run over the undirected graph among them (warm-started from in.Prev
// when it knows any of them), the rest of in.Order by Place, beside
// their placed neighbours, with a jitter of p.Jitter times the laid-out
// graph's mean edge length. x[v], y[v] is node v's position; NaN for the
// unranked and for ranked nodes with no placed node within maxPlaceWaves
// links.
//
// When in.PrevFingerprint equals this input's Fingerprint and in.Prev
// knows every top node, the previous positions are kept as they are: an
// unchanged graph keeps an unchanged map.
func Map(ctx context.Context, in MapInput, p Params) (x, y []float64, st MapStats, err error) {
	p, err = p.withDefaults()
	if err != nil {
		return nil, nil, st, err
	}
	g := in.Graph
	top := in.Order[:max(0, min(in.Top, len(in.Order)))]
	sub, _, err := Induced(g, top)
	if err != nil {
		return nil, nil, st, err
	}
	if in.Community != nil {
		sub.Community = make([]int32, len(top))
		for i, v := range top {
			sub.Community[i] = in.Community(v)
		}
	}
	keys := make([]uint64, len(top))
	for i, v := range top {
		keys[i] = in.Key(v)
	}
	st.Fingerprint = Fingerprint(sub, keys, p)

	start := Start{X: make([]float64, len(top)), Y: make([]float64, len(top)), Known: make([]bool, len(top))}
	known := 0
	if in.Prev != nil {
		for i, v := range top {
			start.X[i], start.Y[i], start.Known[i] = in.Prev(v)
			if start.Known[i] {
				known++
			}
		}
	}
	var lx, ly []float64
	if known == len(top) && in.PrevFingerprint != 0 && in.PrevFingerprint == st.Fingerprint {
		lx, ly = start.X, start.Y
		st.Reused = true
		st.Nodes, st.Edges, st.Known = sub.N(), sub.NumEdges(), known
	} else {
		lx, ly, st.RunStats, err = Run(ctx, sub, keys, start, p)
		if err != nil {
			return nil, nil, st, err
		}
	}

	x, y = make([]float64, g.N), make([]float64, g.N)
	for v := range x {
		x[v], y[v] = math.NaN(), math.NaN()
	}
	for i, v := range top {
		x[v], y[v] = lx[i], ly[i]
	}
	st.ByLayout = len(top)
	all := make([]bool, len(top))
	for i := range all {
		all[i] = true
	}
	st.MeanEdgeLength = meanEdgeLength(sub, lx, ly, all)
	if len(top) < len(in.Order) {
		ranked := make([]bool, g.N)
		for _, v := range in.Order {
			ranked[v] = true
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, st, err
		}
		st.ByNeighbours = Place(g, x, y, func(v uint32) bool { return ranked[v] }, in.Key, p.Jitter*st.MeanEdgeLength, p.Seed, in.Community)
	}
	st.Unplaced = len(in.Order) - st.ByLayout - st.ByNeighbours
	return x, y, st, nil
}

// fingerprintVersion changes whenever the layout's algorithm does, so
// that positions from an older algorithm are never kept as they are.
// Version 2: multilevel cold starts, the work budget, theta 1.6.
// Version 3: communities (seeded as regions, Between).
const fingerprintVersion = 3

// Fingerprint is a 64-bit digest of a layout's input: the nodes by key
// (with their communities), the undirected edges by their ends' keys and
// the parameters that shape the result (not Workers, which does not). It
// does not depend on node numbering. Never 0.
func Fingerprint(g *Graph, keys []uint64, p Params) uint64 {
	p, _ = p.withDefaults()
	h := mix(fingerprintVersion)
	for _, v := range []uint64{uint64(g.N()), uint64(g.NumEdges()), uint64(p.Iterations), uint64(p.WarmIterations),
		math.Float64bits(p.WarmSpeed), math.Float64bits(p.Theta), math.Float64bits(p.Scaling), math.Float64bits(p.Gravity),
		math.Float64bits(p.Jitter), p.Seed, boolBits(p.LinLog), uint64(p.Budget), math.Float64bits(p.Between),
		boolBits(g.Community != nil)} {
		h = mix(h ^ v)
	}
	// Sums of per-node and per-edge hashes: independent of the order.
	var nodes, edges uint64
	for i := range g.N() {
		ki := keys[i]
		if g.Community != nil {
			nodes += mix(ki ^ mix(uint64(uint32(g.Community[i]))+0xbb67ae8584caa73b))
		}
		nodes += mix(ki ^ 0x6a09e667f3bcc909)
		for _, j := range g.Neighbours(i) {
			if int(j) > i {
				a, b := min(ki, keys[j]), max(ki, keys[j])
				edges += mix(a ^ mix(b+0x3c6ef372fe94f82b))
			}
		}
	}
	h = mix(mix(h^nodes) ^ edges)
	if h == 0 {
		h = 1
	}
	return h
}

func boolBits(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// FormatFingerprint and ParseFingerprint write and read a fingerprint as
// 16 hexadecimal digits (how a snapshot keeps it).
func FormatFingerprint(h uint64) string { return fmt.Sprintf("%016x", h) }

// ParseFingerprint reads FormatFingerprint's text.
func ParseFingerprint(s string) (uint64, error) {
	h, err := strconv.ParseUint(s, 16, 64)
	if len(s) != 16 || err != nil {
		return 0, fmt.Errorf("layout: fingerprint %q: want 16 hex digits", s)
	}
	return h, nil
}
