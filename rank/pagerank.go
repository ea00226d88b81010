// Package rank computes domain ranks over a compact in-memory graph (CSR of
// uint32 ids): PageRank as DESIGN.md defines it, and the ordering of scores
// into ranks.
package rank

// Params are PageRank's parameters (DESIGN.md, "Ranks").
type Params struct {
	Damping       float64 // 0.85
	Tolerance     float64 // stop when the L1 change between iterations is below this: 1e-9
	MaxIterations int     // 100
	Workers       int     // 0: every core
}

// DefaultParams are DESIGN.md's.
var DefaultParams = Params{Damping: 0.85, Tolerance: 1e-9, MaxIterations: 100}

// CSR is a directed graph of N nodes stored by in-edges: the sources of the
// edges into v are Sources[Offsets[v]:Offsets[v+1]]. OutDegree counts each
// node's distinct out-edges. Self-loops and duplicate edges are not stored.
type CSR struct {
	N         uint32
	Offsets   []uint32 // len N+1
	Sources   []uint32
	OutDegree []uint32
}

// Result is what PageRank returns.
type Result struct {
	Scores     []float64 // sum to 1
	Iterations int
	Residual   float64 // L1 change of the last iteration
}
