package rank

import (
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/mapthenet/mapthenet/internal/parallel"
	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// CSR is a directed graph of N nodes stored by in-edges: In(v) lists the
// sources of the edges into v, in increasing order, and OutDegree counts
// each node's distinct out-edges. Self-loops and duplicate edges are not
// stored. Build one with BuildCSR (edges in memory) or ReadIDGraph (an
// edge file of dense ids, streamed). It may hold more than 2³² edges.
type CSR struct {
	N         uint32
	Sources   []uint32 // every node's in-edges in turn: v's are Sources[Start(v):Start(v+1)]
	OutDegree []uint32
	offsets   offsets
}

// Start is the index in Sources of node v's first in-edge; Start(N) is
// the number of edges.
func (g *CSR) Start(v uint32) uint64 { return g.offsets.start(v) }

// In lists the sources of the edges into v, in increasing order.
func (g *CSR) In(v uint32) []uint32 { return g.Sources[g.offsets.start(v):g.offsets.start(v+1)] }

// InDegree is the number of distinct nodes linking to v.
func (g *CSR) InDegree(v uint32) uint32 { return uint32(g.offsets.degree(v)) }

// NumEdges is the number of distinct edges.
func (g *CSR) NumEdges() int { return len(g.Sources) }

// check verifies the CSR's shape (not the order of each node's sources).
func (g *CSR) check() error {
	if len(g.OutDegree) != int(g.N) {
		return fmt.Errorf("rank: malformed CSR: %d nodes, %d out-degrees", g.N, len(g.OutDegree))
	}
	return g.offsets.check(g.N, len(g.Sources))
}

// checkSources checks that every source names one of the N nodes (on up
// to workers goroutines: a pass over the sources).
func (g *CSR) checkSources(workers int) error {
	m := len(g.Sources)
	parts := max(1, min(workers, m/parallelMinEdges))
	bad := make([]int, parts)
	parallel.Run(parts, func(k int) {
		bad[k] = -1
		lo, hi := k*m/parts, (k+1)*m/parts
		most := uint32(0)
		for _, u := range g.Sources[lo:hi] {
			most = max(most, u)
		}
		if most >= g.N && hi > lo {
			bad[k] = lo + slices.IndexFunc(g.Sources[lo:hi], func(u uint32) bool { return u >= g.N })
		}
	})
	for _, i := range bad {
		if i >= 0 {
			return fmt.Errorf("rank: malformed CSR: source %d of in-edge %d is not a node (%d nodes)", g.Sources[i], i, g.N)
		}
	}
	return nil
}

// BuildCSR builds the in-edge CSR of the graph of n nodes whose edges are
// src[i]→dst[i]: self-loops are dropped, duplicate edges kept once, and
// OutDegree counts distinct out-edges. It does not modify src or dst.
// workers <= 0 means GOMAXPROCS. The result is the same for any workers
// and any order of the edges.
//
// It is a counting sort by dst (each worker counts and places its own
// contiguous share of the edges, so the placement is the sequential one),
// then a sort and dedupe of each node's sources.
func BuildCSR(n uint32, src, dst []uint32, workers int) (*CSR, error) {
	if len(src) != len(dst) {
		return nil, fmt.Errorf("rank: %d sources but %d targets", len(src), len(dst))
	}
	return buildCSR(n, edgefile.RunsOf(src), dst, nil, workers)
}

// buildCSR is BuildCSR of the edges whose sources are runs (row i's
// source src[i]: see edgefile.Run) and whose targets are dst, mapped by
// perm (perm[src[i]]→perm[dst[i]]) when perm is not nil: the edges then
// hold ids below len(perm), which perm maps to the graph's n nodes (ids
// that no edge names may map anywhere). The edges are counted by their
// own ids and placed under their mapped targets, so mapping costs a
// lookup of perm for each run and for each id, not for each edge.
func buildCSR(n uint32, runs []edgefile.Run, dst, perm []uint32, workers int) (*CSR, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	m := len(dst)
	ids := n // the ids the edges hold
	if perm != nil {
		ids = uint32(len(perm))
	}
	// Small inputs are not worth the per-worker count arrays; a part's
	// counts are 32-bit, so no part holds 2³² edges.
	parts := max(1, min(workers, m/parallelMinEdges), (m+math.MaxUint32-1)/math.MaxUint32)
	cut, err := cutRuns(runs, m, parts)
	if err != nil {
		return nil, err
	}

	// Sources first, while the memory the caller's earlier stages freed
	// (rank --edges: the name table, the renumbering's buffers) is still
	// in one piece: made after the count arrays it took fresh memory (at
	// L this order and the cursors' reuse below took the peak from 1.94
	// to 1.72 GiB). Its length is the edges: the in-edges' count, or
	// more by the self-loops, whose slots stay unused.
	sources := makeLarge[uint32](m, m)
	// Pass 1: per-part in-degree counts (self-loops excluded) and id check.
	counts := make([][]uint32, parts)
	errs := make([]error, parts)
	parallel.Run(parts, func(k int) {
		c := makeLarge[uint32](int(ids), int(max(ids, n))+1) // n+1: dedupe's scratch later
		counts[k] = c
		p := cut[k]
		for r, row := p.first, p.lo; row < p.hi; r++ {
			next, s := p.stop(runs, r, row), runs[r].ID
			for i, t := range dst[row:next] {
				if s >= ids || t >= ids {
					errs[k] = fmt.Errorf("rank: edge %d (%d→%d) names a node outside 0..%d", row+i, s, t, int64(ids)-1)
					return
				}
				if s != t {
					c[t]++
				}
			}
			row = next
		}
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	// Offsets, and each part's first slot within each node's in-edges
	// (counts[k] becomes part k's write cursor, by id).
	deg := makeLarge[uint32](int(n)+1, int(n)+1)
	for v := range ids {
		var d uint64
		for k := range parts {
			c := counts[k][v]
			counts[k][v] = uint32(d)
			d += uint64(c)
		}
		node := v
		if perm != nil {
			if d == 0 {
				continue // maybe an id no edge names: it must not touch another's degree
			}
			node = perm[v]
		}
		if d > math.MaxUint32 {
			return nil, fmt.Errorf("rank: node %d has %d in-edges, duplicates included: more than 2³²-1", node, d)
		}
		deg[node] = uint32(d)
	}
	g := &CSR{N: n, offsets: offsetsOfDegrees(deg)}
	total := g.offsets.total()
	g.Sources = sources[:total]

	// Pass 2: place every source under its target.
	abs := absoluteCursors(g, counts, perm)
	parallel.Run(parts, func(k int) {
		placeEdges(g, counts[k], abs, runs, dst, cut[k], perm)
	})
	// The cursors are spent: their memory is dedupe's and countOut's
	// scratch (hundreds of MB a graph of millions of nodes would
	// otherwise take fresh).
	if g.dedupe(workers, counts[0]) {
		counts = counts[1:]
	}
	g.countOut(workers, counts)
	return g, nil
}

// absoluteCursors prepares the write cursors of the parts that place a
// graph's edges: cursor[k][t] is where part k writes its first in-edge of
// t (an id, mapped by perm when not nil), relative to t's first in-edge.
// Below 2³² edges it makes them absolute (and returns true), which saves
// placeEdges a lookup of t's offset per edge; above, each edge looks its
// target's offset up (the path tests take with offsetBits lowered).
func absoluteCursors(g *CSR, cursor [][]uint32, perm []uint32) bool {
	if len(g.offsets.steps) > 0 {
		return false
	}
	low := g.offsets.low
	parallel.Run(len(cursor), func(k int) {
		cur := cursor[k]
		if perm == nil {
			for v := range cur {
				cur[v] += low[v]
			}
			return
		}
		for v := range cur {
			cur[v] += low[perm[v]]
		}
	})
	return true
}

// placeEdges writes the edges of part p (sources runs, targets dst;
// self-loops skipped) under their targets from the cursors cur (advanced
// as it goes; abs: as made by absoluteCursors), the ids mapped by perm
// when it is not nil.
func placeEdges(g *CSR, cur []uint32, abs bool, runs []edgefile.Run, dst []uint32, p runPart, perm []uint32) {
	out := g.Sources
	switch {
	case abs && perm == nil:
		for r, row := p.first, p.lo; row < p.hi; r++ {
			next, s := p.stop(runs, r, row), runs[r].ID
			for _, t := range dst[row:next] {
				if s != t {
					out[cur[t]] = s
					cur[t]++
				}
			}
			row = next
		}
	case abs:
		for r, row := p.first, p.lo; row < p.hi; r++ {
			next, s := p.stop(runs, r, row), runs[r].ID
			ms := perm[s]
			for _, t := range dst[row:next] {
				if s != t {
					out[cur[t]] = ms
					cur[t]++
				}
			}
			row = next
		}
	default:
		for r, row := p.first, p.lo; row < p.hi; r++ {
			next, s := p.stop(runs, r, row), runs[r].ID
			ms := s
			if perm != nil {
				ms = perm[s]
			}
			for _, t := range dst[row:next] {
				if s != t {
					v := t
					if perm != nil {
						v = perm[t]
					}
					out[g.offsets.start(v)+uint64(cur[t])] = ms
					cur[t]++
				}
			}
			row = next
		}
	}
}

// sortSources sorts each node's sources.
func (g *CSR) sortSources(workers int) {
	bounds := g.chunks()
	forChunks(len(bounds)-1, workers, func(c int) {
		var scratch []uint32
		for v := bounds[c]; v < bounds[c+1]; v++ {
			sortSegment(g.In(v), &scratch)
		}
	})
}

// sortSegment sorts one node's sources (scratch: radixSort's buffer,
// grown as needed).
func sortSegment(seg []uint32, scratch *[]uint32) {
	if slices.IsSorted(seg) {
		return
	}
	if len(seg) < radixMin {
		slices.Sort(seg)
		return
	}
	if cap(*scratch) < len(seg) {
		*scratch = make([]uint32, len(seg))
	}
	radixSort(seg, (*scratch)[:len(seg)])
}

// dedupe sorts each node's sources and drops repeats, compacting Sources
// and rewriting the offsets. kept (room for n+1 entries, its contents
// unused) is its scratch. It returns true when there were repeats: kept
// is then the new offsets' memory, no longer scratch.
func (g *CSR) dedupe(workers int, kept []uint32) bool {
	n := g.N
	kept = kept[:n+1]
	bounds := g.chunks()
	forChunks(len(bounds)-1, workers, func(c int) {
		var scratch []uint32
		for v := bounds[c]; v < bounds[c+1]; v++ {
			seg := g.In(v)
			sortSegment(seg, &scratch)
			kept[v] = uint32(len(slices.Compact(seg)))
		}
	})
	// Compact in increasing node order: a segment only ever moves down.
	var w uint64
	for v := range n {
		lo := g.Start(v)
		if w != lo {
			copy(g.Sources[w:], g.Sources[lo:lo+uint64(kept[v])])
		}
		w += uint64(kept[v])
	}
	if int(w) == len(g.Sources) {
		return false // no repeats: the offsets stand
	}
	g.offsets = offsetsOfDegrees(kept)
	g.Sources = slices.Clip(g.Sources[:w])
	return true
}

// radixMin is the least segment radixSort sorts: half the edges of a
// host graph are in segments of hundreds to hundreds of thousands of
// sources (the in-links of popular domains), where a comparison sort
// spent most of BuildCSR's time.
const radixMin = 256

// radixSort sorts a by LSD radix sort on bytes, using buf (as long as a)
// as scratch; passes where every value has the same byte are skipped.
func radixSort(a, buf []uint32) {
	src, dst := a, buf
	for shift := uint(0); shift < 32; shift += 8 {
		var count [256]int
		for _, x := range src {
			count[byte(x>>shift)]++
		}
		if count[byte(src[0]>>shift)] == len(src) {
			continue
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, x := range src {
			d := byte(x >> shift)
			dst[count[d]] = x
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &a[0] {
		copy(a, src)
	}
}

// countOut fills OutDegree from the deduplicated in-edges.
func (g *CSR) countOut(workers int, scratch [][]uint32) {
	m := len(g.Sources)
	parts := max(1, min(workers, m/parallelMinEdges))
	counts := make([][]uint32, parts)
	parallel.Run(parts, func(k int) {
		var c []uint32
		if k < len(scratch) && cap(scratch[k]) >= int(g.N) {
			c = scratch[k][:g.N]
			clear(c)
		} else {
			c = makeLarge[uint32](int(g.N), int(g.N))
		}
		for _, s := range g.Sources[k*m/parts : (k+1)*m/parts] {
			c[s]++
		}
		counts[k] = c
	})
	out := counts[0]
	for _, c := range counts[1:] {
		for v, x := range c {
			out[v] += x
		}
	}
	g.OutDegree = slices.Clip(out)
}

// parallelMinEdges is the least work per goroutine for the edge passes
// (a variable so tests can exercise the parallel paths on small graphs).
var parallelMinEdges = 1 << 20
