package rank

import (
	"cmp"
	"slices"
	"strings"
)

// renumber makes ids independent of the input's order: it sorts the names
// and gives ids in name order, rewriting src and dst in place. Then the
// CSR, the floating-point sums and so the scores are the same bit for bit
// whatever order the edge file lists its rows in, and ties between equal
// scores go to the lower id, which is the smaller name.
func renumber(names []string, src, dst []uint32, workers int) []string {
	return renumberShards([][]string{names}, src, dst, workers)
}

// renumberShards is renumber for the names of a shardSet: shards[k][i]'s
// id is i*len(shards)+k.
func renumberShards(shards [][]string, src, dst []uint32, workers int) []string {
	n, most := 0, 0
	for _, names := range shards {
		n += len(names)
		most = max(most, len(names))
	}
	// Each item carries the name's first 8 bytes as a big-endian number:
	// most comparisons are settled by it without following the string
	// pointer, which for millions of names is a cache miss each.
	type item struct {
		prefix uint64
		name   string
		id     uint32
	}
	items := make([]item, n)
	nsh := uint32(len(shards))
	j := 0
	for k, names := range shards {
		for i, s := range names {
			items[j] = item{prefix8(s), s, uint32(i)*nsh + uint32(k)}
			j++
		}
	}
	byName := func(a, b item) int {
		if a.prefix != b.prefix {
			return cmp.Compare(a.prefix, b.prefix)
		}
		return strings.Compare(a.name, b.name)
	}

	// Sort one part per worker at once, then merge the parts pairwise.
	parts := max(1, min(workers, n/(parallelMinEdges>>4)))
	bounds := make([]int, parts+1)
	for k := range bounds {
		bounds[k] = k * n / parts
	}
	parallel(parts, func(k int) { slices.SortFunc(items[bounds[k]:bounds[k+1]], byName) })
	if parts > 1 {
		buf := make([]item, n)
		for len(bounds) > 2 {
			var next []int
			var pairs [][3]int
			for k := 0; k+1 < len(bounds); k += 2 {
				if k+2 < len(bounds) {
					pairs = append(pairs, [3]int{bounds[k], bounds[k+1], bounds[k+2]})
				} else {
					pairs = append(pairs, [3]int{bounds[k], bounds[k+1], -1})
				}
				next = append(next, bounds[k])
			}
			next = append(next, n)
			parallel(len(pairs), func(p int) {
				lo, mid, hi := pairs[p][0], pairs[p][1], pairs[p][2]
				if hi < 0 { // odd one out: carry over
					copy(buf[lo:mid], items[lo:mid])
					return
				}
				i, j, o := lo, mid, lo
				for i < mid && j < hi {
					if byName(items[j], items[i]) < 0 {
						buf[o] = items[j]
						j++
					} else {
						buf[o] = items[i]
						i++
					}
					o++
				}
				o += copy(buf[o:], items[i:mid])
				copy(buf[o:], items[j:hi])
			})
			items, buf = buf, items
			bounds = next
		}
	}

	perm := make([]uint32, most*len(shards))
	sorted := make([]string, n)
	for newID, it := range items {
		perm[it.id] = uint32(newID)
		sorted[newID] = it.name
	}
	items = nil
	m := len(src)
	wk := max(1, min(workers, m/parallelMinEdges))
	parallel(wk, func(k int) {
		for i := k * m / wk; i < (k+1)*m/wk; i++ {
			src[i] = perm[src[i]]
			dst[i] = perm[dst[i]]
		}
	})
	return sorted
}

// prefix8 is s's first 8 bytes as a big-endian number, zero-padded: it
// orders like the strings' byte order as far as those bytes go.
func prefix8(s string) uint64 {
	var p uint64
	for i := range 8 {
		p <<= 8
		if i < len(s) {
			p |= uint64(s[i])
		}
	}
	return p
}
