package rank

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/mapthenet/mapthenet/internal/parallel"
)

// Ranks orders the nodes that have at least one (followed) in-link by
// score, highest first, ties broken by name in ascending byte order, and
// returns each node's rank (1 = top; 0 = unranked: no in-link) and the
// ranked nodes in rank order. names[v] is node v's name; nil means the
// node ids are already in name order, so ties go to the lower id.
func Ranks(g *CSR, scores []float64, names []string) (ranks []uint32, order []uint32, err error) {
	var name func(uint32) string
	if names != nil {
		if len(names) != int(g.N) {
			return nil, nil, fmt.Errorf("rank: %d names for %d nodes", len(names), g.N)
		}
		name = func(id uint32) string { return names[id] }
	}
	order, err = rankOrder(g, scores, name)
	if err != nil {
		return nil, nil, err
	}
	ranks = make([]uint32, g.N)
	for i, v := range order {
		ranks[v] = uint32(i + 1)
	}
	return ranks, order, nil
}

// rankOrder is Ranks' order alone (the rank files need no more), node v
// named name(v) (nil: ids in name order).
func rankOrder(g *CSR, scores []float64, name func(uint32) string) (order []uint32, err error) {
	n := int(g.N)
	if len(scores) != n {
		return nil, fmt.Errorf("rank: %d scores for %d nodes", len(scores), n)
	}
	byScore := make([]keyed, 0, n)
	for v := range g.N {
		if g.InDegree(v) > 0 {
			byScore = append(byScore, keyed{scoreKey(scores[v]), v})
		}
	}
	// Stable: equal scores keep ids in increasing order.
	byScore = sortKeyed(byScore)
	if name != nil {
		breakTiesByName(byScore, name)
	}
	order = make([]uint32, len(byScore))
	for i, it := range byScore {
		order[i] = it.id
	}
	return order, nil
}

// scoreKey is a score's sort key, highest first: non-negative floats
// order like their bit patterns.
func scoreKey(s float64) uint64 {
	if !(s > 0) {
		s = 0 // -0, negative and NaN cannot come from PageRank; keeps equal scores equal keys
	}
	return ^math.Float64bits(s)
}

// breakTiesByName sorts each run of equal keys in a (sorted by key) by
// the names of their ids. Ties are few and short next to the items (for
// ranks, mostly leaves linked from the same few pages), so this costs a
// scan where a comparison sort of every item by key and name cost seconds
// for millions.
func breakTiesByName(a []keyed, name func(id uint32) string) {
	for i := 0; i < len(a); {
		j := i + 1
		for j < len(a) && a[j].key == a[i].key {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(a[i:j], func(x, y keyed) int { return strings.Compare(name(x.id), name(y.id)) })
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
// once, then merged back into a (ties to the first half): the result does
// not depend on the cores. It takes one buffer as big as a.
func sortKeyed(a []keyed) []keyed {
	if len(a) < 1<<16 {
		return radixKeyed(a, make([]keyed, len(a)))
	}
	half := len(a) / 2
	buf := makeLarge[keyed](len(a), len(a))
	parallel.Run(2, func(k int) {
		lo, hi := 0, half
		if k == 1 {
			lo, hi = half, len(a)
		}
		// Leave each sorted half in buf, to merge into a.
		if sorted := radixKeyed(a[lo:hi], buf[lo:hi]); &sorted[0] != &buf[lo] {
			copy(buf[lo:hi], sorted)
		}
	})
	x, y := buf[:half], buf[half:]
	i, j, o := 0, 0, 0
	for i < len(x) && j < len(y) {
		if y[j].key < x[i].key {
			a[o] = y[j]
			j++
		} else {
			a[o] = x[i]
			i++
		}
		o++
	}
	o += copy(a[o:], x[i:])
	copy(a[o:], y[j:])
	return a
}

// radixKeyed sorts a by key with an LSD radix sort on bytes, stably,
// using buf (as long as a) as scratch, and returns whichever of the two
// holds the result. Passes where every key has the same byte are skipped.
// (Wider digits, 11 to 16 bits, were no faster on 1M keys.)
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
