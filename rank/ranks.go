package rank

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// Ranks orders the nodes that have at least one (followed) in-link by
// score, highest first, ties broken by name in ascending byte order, and
// returns each node's rank (1 = top; 0 = unranked: no in-link) and the
// ranked nodes in rank order. names[v] is node v's name; nil means the
// node ids are already in name order, so ties go to the lower id.
func Ranks(g *CSR, scores []float64, names []string) (ranks []uint32, order []uint32, err error) {
	n := int(g.N)
	if len(scores) != n {
		return nil, nil, fmt.Errorf("rank: %d scores for %d nodes", len(scores), n)
	}
	if names != nil && len(names) != n {
		return nil, nil, fmt.Errorf("rank: %d names for %d nodes", len(names), n)
	}
	order = make([]uint32, 0, n)
	for v := range g.N {
		if g.Offsets[v+1] > g.Offsets[v] {
			order = append(order, v)
		}
	}
	sortByScoreThenID(order, scores)
	if names != nil {
		breakTiesByName(order, scores, names)
	}
	ranks = make([]uint32, n)
	for i, v := range order {
		ranks[v] = uint32(i + 1)
	}
	return ranks, order, nil
}

// sortByScoreThenID sorts ids (given in increasing order) by score
// descending, ties by id ascending: a stable sort (sortKeyed) on the
// score's bits, as non-negative floats order like their bit patterns.
func sortByScoreThenID(ids []uint32, scores []float64) {
	a := make([]keyed, len(ids))
	for i, v := range ids {
		s := scores[v]
		if !(s > 0) {
			s = 0 // -0, negative and NaN cannot come from PageRank; keeps equal scores equal keys
		}
		a[i] = keyed{^math.Float64bits(s), v} // descending
	}
	for i, it := range sortKeyed(a) {
		ids[i] = it.id
	}
}

// breakTiesByName sorts each run of equal scores in order by name. Ties
// are few and short next to the nodes (most are leaves linked from the
// same few pages), so this costs a scan where a comparison sort of
// every node by score and name cost seconds for millions.
func breakTiesByName(order []uint32, scores []float64, names []string) {
	for i := 0; i < len(order); {
		j := i + 1
		for j < len(order) && scores[order[j]] == scores[order[i]] {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(order[i:j], func(a, b uint32) int { return strings.Compare(names[a], names[b]) })
		}
		i = j
	}
}

// keyed is an id and its sort key.
type keyed struct {
	key uint64
	id  uint32
}

// sortKeyed sorts a by key, stably, and returns the sorted items, in a or
// in a new slice. For millions of items a radix sort is several times
// faster than a comparison sort. Big inputs are sorted in two halves at
// once, then merged (ties to the first half): the result does not depend
// on the cores.
func sortKeyed(a []keyed) []keyed {
	if len(a) < 1<<16 {
		return radixKeyed(a, make([]keyed, len(a)))
	}
	half := len(a) / 2
	buf := make([]keyed, len(a))
	var x, y []keyed
	parallel(2, func(k int) {
		if k == 0 {
			x = radixKeyed(a[:half], buf[:half])
		} else {
			y = radixKeyed(a[half:], buf[half:])
		}
	})
	out := make([]keyed, len(a))
	i, j, o := 0, 0, 0
	for i < len(x) && j < len(y) {
		if y[j].key < x[i].key {
			out[o] = y[j]
			j++
		} else {
			out[o] = x[i]
			i++
		}
		o++
	}
	o += copy(out[o:], x[i:])
	copy(out[o:], y[j:])
	return out
}

// radixKeyed sorts a by key with an LSD radix sort on bytes, stably,
// using buf (as long as a) as scratch, and returns whichever of the two
// holds the result. Passes where every key has the same byte are skipped.
func radixKeyed(a, buf []keyed) []keyed {
	if len(a) == 0 {
		return a
	}
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		count = [256]int{}
		for _, it := range a {
			count[byte(it.key>>shift)]++
		}
		if count[byte(a[0].key>>shift)] == len(a) {
			continue
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, it := range a {
			k := byte(it.key >> shift)
			buf[count[k]] = it
			count[k]++
		}
		a, buf = buf, a
	}
	return a
}
