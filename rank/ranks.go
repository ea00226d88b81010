package rank

import (
	"cmp"
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
// descending, ties by id ascending. It is a stable LSD radix sort on the
// score's bits: non-negative floats order like their bit patterns, and
// stability keeps the ids of equal scores in increasing order. For
// millions of nodes this is several times faster than a comparison sort.
// Big inputs are sorted in two halves at once, then merged (ties to the
// first half, whose ids are the smaller): the result does not depend on
// the cores.
func sortByScoreThenID(ids []uint32, scores []float64) {
	if len(ids) < 1<<12 {
		slices.SortStableFunc(ids, func(a, b uint32) int { return cmp.Compare(scores[b], scores[a]) })
		return
	}
	if len(ids) < 1<<16 {
		for i, it := range radixByScore(ids, scores) {
			ids[i] = it.id
		}
		return
	}
	half := len(ids) / 2
	var x, y []scoreItem
	parallel(2, func(k int) {
		if k == 0 {
			x = radixByScore(ids[:half], scores)
		} else {
			y = radixByScore(ids[half:], scores)
		}
	})
	i, j, o := 0, 0, 0
	for i < len(x) && j < len(y) {
		if y[j].key < x[i].key {
			ids[o] = y[j].id
			j++
		} else {
			ids[o] = x[i].id
			i++
		}
		o++
	}
	for ; i < len(x); i++ {
		ids[o] = x[i].id
		o++
	}
	for ; j < len(y); j++ {
		ids[o] = y[j].id
		o++
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

// scoreItem is a node and its sort key: the score's bits, complemented
// so that the highest score comes first.
type scoreItem struct {
	key uint64
	id  uint32
}

// radixByScore returns ids sorted by key, stably.
func radixByScore(ids []uint32, scores []float64) []scoreItem {
	a := make([]scoreItem, len(ids))
	for i, v := range ids {
		s := scores[v]
		if !(s > 0) {
			s = 0 // -0, negative and NaN cannot come from PageRank; keeps equal scores equal keys
		}
		a[i] = scoreItem{^math.Float64bits(s), v} // descending
	}
	b := make([]scoreItem, len(ids))
	var count [256]int
	for shift := uint(0); shift < 64; shift += 8 {
		count = [256]int{}
		for _, it := range a {
			count[byte(it.key>>shift)]++
		}
		if count[byte(a[0].key>>shift)] == len(a) {
			continue // every key has the same byte here
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, it := range a {
			k := byte(it.key >> shift)
			b[count[k]] = it
			count[k]++
		}
		a, b = b, a
	}
	return a
}
