package rank

import (
	"github.com/cespare/xxhash/v2"

	"github.com/mapthenet/mapthenet/internal/parallel"
	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// renumber gives the names of an edge file, in parts as edgefile.Read
// gives them (part k's i-th name has id i*Parts()+k), new ids, 0, 1, 2,
// ..., in a canonical order, and returns the names by new id and perm,
// the new id of each old id (ids no name has map to 0). The edges (their
// sources' runs here), of old ids, are only read: buildCSR maps them as
// it places them, which saves rewriting them (a random read of perm for
// each of a hundred million targets at L, 1.5 CPU-seconds).
//
// The order is by the number of edges (src, dst pairs) a name is the
// source of, most first (up to 65535: above that, all count the same),
// then by a fixed hash of the name, then by name. It depends on the
// multiset of edges only, never on their order nor on the workers, so
// the CSR, the floating-point sums and the scores are the same bit for
// bit whatever order the edge file lists its rows in and on every run.
// The sources first because PageRank's inner loop reads, for every
// in-link, the share its source gives, in no order the cache can follow:
// with the busiest sources together (and the sources of no edge, a third
// of a host graph, out of the way) those reads fall on fewer cache lines
// and pages. On the M graph an iteration took 30% less than with ids in
// name order. The hash rather than the name itself makes the key one
// integer, radix-sorted: a comparison sort by name took seconds at L.
func renumber(names *edgefile.Names, runs []edgefile.Run, workers int) (_ *edgefile.Names, perm []uint32) {
	n, most, nsh := names.Len(), 0, names.Parts()
	for k := range nsh {
		most = max(most, names.PartLen(k))
	}
	out := countSources(runs, most*nsh, workers)
	items := makeLarge[keyed](n, n)
	parts := max(1, min(workers, nsh))
	parallel.Run(parts, func(p int) {
		j := 0
		for k := range nsh {
			if k%parts != p {
				j += names.PartLen(k)
				continue
			}
			for i := range names.PartLen(k) {
				id := uint32(i)*uint32(nsh) + uint32(k)
				items[j] = keyed{orderKey(out[id], names.PartName(k, i)), id}
				j++
			}
		}
	})
	out = nil
	items = sortKeyed(items)
	// Equal keys (a 48-bit hash shared within one count: rare) go by name.
	breakTiesByName(items, names.Name)

	perm = makeLarge[uint32](most*nsh, most*nsh)
	sorted := makeLarge[edgefile.NameRef](n, n)
	// Two random accesses an item (its old id's perm entry and name
	// reference): the items are cut into stretches, one a worker.
	wn := max(1, min(workers, n/parallelMinEdges))
	parallel.Run(wn, func(k int) {
		for newID := k * n / wn; newID < (k+1)*n/wn; newID++ {
			it := items[newID]
			perm[it.id] = uint32(newID)
			sorted[newID] = names.Ref(it.id)
		}
	})
	items = nil
	return names.Reordered(sorted), perm
}

// orderKey is renumber's sort key for a name that is the source of
// out edges: the count, complemented (most first), in the top 16 bits,
// the top 48 bits of the name's xxhash below.
func orderKey(out uint32, name string) uint64 {
	return uint64(0xFFFF-min(out, 0xFFFF))<<48 | xxhash.Sum64String(name)>>orderHashShift
}

// orderHashShift is 16 (keep 48 bits of the hash); tests set it higher to
// make equal keys common.
var orderHashShift uint = 16

// countSources counts the edges from each of the n ids, a run at a time
// (up to 65535: orderKey counts no further, and a count must not wrap).
func countSources(runs []edgefile.Run, n, workers int) []uint32 {
	m := len(runs)
	parts := max(1, min(workers, m/parallelMinEdges))
	counts := make([][]uint32, parts)
	parallel.Run(parts, func(k int) {
		c := makeLarge[uint32](n, n)
		for _, r := range runs[k*m/parts : (k+1)*m/parts] {
			c[r.ID] += min(r.N, 0xFFFF)
		}
		counts[k] = c
	})
	for _, c := range counts[1:] {
		for v, x := range c {
			counts[0][v] += x
		}
	}
	return counts[0]
}
