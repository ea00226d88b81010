package rank

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/mapthenet/mapthenet/internal/parallel"
)

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
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	m := len(src)
	// Small inputs are not worth the per-worker count arrays.
	parts := max(1, min(workers, m/parallelMinEdges))

	// Pass 1: per-part in-degree counts (self-loops excluded) and id check.
	counts := make([][]uint32, parts)
	errs := make([]error, parts)
	span := func(k int) (int, int) { return k * m / parts, (k + 1) * m / parts }
	parallel.Run(parts, func(k int) {
		c := makeLarge[uint32](int(n), int(n))
		lo, hi := span(k)
		for i := lo; i < hi; i++ {
			s, t := src[i], dst[i]
			if s >= n || t >= n {
				errs[k] = fmt.Errorf("rank: edge %d (%d→%d) names a node outside 0..%d", i, s, t, int64(n)-1)
				return
			}
			if s != t {
				c[t]++
			}
		}
		counts[k] = c
	})
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}

	// Offsets, and each part's first slot per node (counts[k] becomes
	// part k's write cursor).
	offsets := makeLarge[uint32](int(n)+1, int(n)+1)
	var total uint64
	for v := range n {
		offsets[v] = uint32(total)
		for k := range parts {
			c := counts[k][v]
			counts[k][v] = uint32(total)
			total += uint64(c)
		}
	}
	if total > 1<<32-1 {
		return nil, fmt.Errorf("rank: %d edges is more than this CSR can hold", total)
	}
	offsets[n] = uint32(total)
	sources := makeLarge[uint32](int(total), int(total))

	// Pass 2: place every source under its target.
	parallel.Run(parts, func(k int) {
		cur := counts[k]
		lo, hi := span(k)
		for i := lo; i < hi; i++ {
			s, t := src[i], dst[i]
			if s != t {
				sources[cur[t]] = s
				cur[t]++
			}
		}
	})
	counts = nil

	g := &CSR{N: n, Offsets: offsets, Sources: sources}
	g.dedupe(workers)
	g.countOut(workers)
	return g, nil
}

// dedupe sorts each node's sources and drops repeats, compacting Sources
// and rewriting Offsets.
func (g *CSR) dedupe(workers int) {
	n := g.N
	kept := makeLarge[uint32](int(n), int(n))
	bounds := g.chunks()
	forChunks(len(bounds)-1, workers, func(c int) {
		var scratch []uint32
		for v := bounds[c]; v < bounds[c+1]; v++ {
			seg := g.Sources[g.Offsets[v]:g.Offsets[v+1]]
			if !slices.IsSorted(seg) {
				if len(seg) < radixMin {
					slices.Sort(seg)
				} else {
					if cap(scratch) < len(seg) {
						scratch = make([]uint32, len(seg))
					}
					radixSort(seg, scratch[:len(seg)])
				}
			}
			kept[v] = uint32(len(slices.Compact(seg)))
		}
	})
	// Compact in increasing node order: a segment only ever moves down.
	w := uint32(0)
	for v := range n {
		lo := g.Offsets[v]
		if w != lo {
			copy(g.Sources[w:], g.Sources[lo:lo+kept[v]])
		}
		g.Offsets[v] = w
		w += kept[v]
	}
	g.Offsets[n] = w
	if int(w) < len(g.Sources) {
		g.Sources = slices.Clip(g.Sources[:w])
	}
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
func (g *CSR) countOut(workers int) {
	m := len(g.Sources)
	parts := max(1, min(workers, m/parallelMinEdges))
	counts := make([][]uint32, parts)
	parallel.Run(parts, func(k int) {
		c := makeLarge[uint32](int(g.N), int(g.N))
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
	g.OutDegree = out
}

// parallelMinEdges is the least work per goroutine for the edge passes
// (a variable so tests can exercise the parallel paths on small graphs).
var parallelMinEdges = 1 << 20
