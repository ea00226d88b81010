package community

import "slices"

// Stable turns Detect's community numbers into ids that last from one
// rebuild to the next. comm maps each node to its community (0..k-1 as
// Detect numbers them, -1 for none); prev maps each node to the id its
// domain had in the previous snapshot (-1: none, or a domain new since).
// next is the least id a new community may take: above every id ever
// handed out (the rebuild passes the previous snapshot's largest + 1).
//
// A community keeps a previous id when it holds a strict majority of that
// id's previous members (those of them still in the graph, assigned or
// not); of several such ids it keeps the one it holds most members of
// (ties: the smallest id). Each previous id goes to one community at most,
// since two disjoint communities cannot both hold a majority of it. The
// other communities take new ids from next up, in Detect's order (largest
// first). It returns each node's id (-1 where comm is -1) and the next
// unused id.
func Stable(comm []int32, k int, prev []int32, next int32) (ids []int32, after int32) {
	if len(prev) != len(comm) { // nodes past prev's end had no id
		padded := make([]int32, len(comm))
		n := copy(padded, prev)
		for v := n; v < len(padded); v++ {
			padded[v] = -1
		}
		prev = padded
	}
	// Dense numbers for the previous ids, in increasing id order, so
	// that arrays index them however large the ids are.
	var distinct []int32
	for _, p := range prev {
		if p >= 0 {
			distinct = append(distinct, p)
		}
		if p >= next {
			next = p + 1
		}
	}
	slices.Sort(distinct)
	distinct = slices.Compact(distinct)
	dense := func(p int32) int {
		i, _ := slices.BinarySearch(distinct, p)
		return i
	}
	np := len(distinct)
	pd := make([]int32, len(prev)) // node → dense previous id, -1: none
	for v, p := range prev {
		pd[v] = -1
		if p >= 0 {
			pd[v] = int32(dense(p))
		}
	}

	// Boyer–Moore majority vote per previous id over its members' new
	// communities (-1 votes too: members gone isolated), then a count.
	cand := make([]int32, np)
	votes := make([]int32, np)
	present := make([]int32, np)
	for v, p := range pd {
		if p < 0 {
			continue
		}
		present[p]++
		switch c := comm[v]; {
		case votes[p] == 0:
			cand[p], votes[p] = c, 1
		case cand[p] == c:
			votes[p]++
		default:
			votes[p]--
		}
	}
	overlap := make([]int32, np)
	for v, p := range pd {
		if p >= 0 && votes[p] > 0 && comm[v] == cand[p] {
			overlap[p]++
		}
	}

	// Each community keeps the previous id it holds most of (by a
	// majority of that id's members).
	keep := make([]int32, k) // community → dense previous id, -1: new
	for c := range keep {
		keep[c] = -1
	}
	for p := range np {
		c := cand[p]
		if votes[p] == 0 || c < 0 || 2*overlap[p] <= present[p] {
			continue
		}
		// p increases, so on equal overlap the smaller id stays.
		if q := keep[c]; q < 0 || overlap[p] > overlap[q] {
			keep[c] = int32(p)
		}
	}
	id := make([]int32, k)
	for c := range k {
		if keep[c] >= 0 {
			id[c] = distinct[keep[c]]
		} else {
			id[c] = next
			next++
		}
	}
	ids = make([]int32, len(comm))
	for v, c := range comm {
		ids[v] = -1
		if c >= 0 {
			ids[v] = id[c]
		}
	}
	return ids, next
}
