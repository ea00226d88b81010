package community

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestStable(t *testing.T) {
	for _, c := range []struct {
		name       string
		comm, prev []int32
		k          int
		next       int32
		want       []int32
		after      int32
	}{
		{"first snapshot: ids from next, largest first", []int32{1, 0, 0, -1}, []int32{-1, -1, -1, -1}, 2, 1,
			[]int32{2, 1, 1, -1}, 3},
		{"same members keep their ids", []int32{0, 0, 1, 1}, []int32{7, 7, 3, 3}, 2, 8,
			[]int32{7, 7, 3, 3}, 8},
		{"a majority keeps the id", []int32{0, 0, 0, 1, 1}, []int32{4, 4, 9, 9, 9}, 2, 10,
			[]int32{4, 4, 4, 9, 9}, 10},
		{"an even split keeps it nowhere", []int32{0, 0, 1, 1}, []int32{5, 5, 5, 5}, 2, 6,
			[]int32{6, 6, 7, 7}, 8},
		{"a merger keeps the larger part's id", []int32{0, 0, 0, 0, 0}, []int32{2, 2, 2, 1, 1}, 1, 3,
			[]int32{2, 2, 2, 2, 2}, 3},
		{"an equal merger keeps the smaller id", []int32{0, 0, 0, 0}, []int32{6, 6, 2, 2}, 1, 7,
			[]int32{2, 2, 2, 2}, 7},
		{"members gone isolated count against", []int32{0, -1, -1}, []int32{3, 3, 3}, 1, 4,
			[]int32{4, -1, -1}, 5},
		{"next is above every previous id", []int32{0, 1}, []int32{9, -1}, 2, 0,
			[]int32{9, 10}, 11},
		{"a short prev: the rest had no id", []int32{0, 0, 0, 1}, []int32{1}, 2, 2,
			[]int32{1, 1, 1, 2}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, after := Stable(c.comm, c.k, c.prev, c.next)
			if !slices.Equal(got, c.want) || after != c.after {
				t.Errorf("Stable(%v, %v) = %v, %d; want %v, %d", c.comm, c.prev, got, after, c.want, c.after)
			}
		})
	}
}

// TestStableUnderChange: when 1% of a planted graph's edges change
// (removed, and as many added at random), community ids carry over:
// at least 95% of the nodes keep their id, and every community of the
// first run with at least 100 members keeps its id for most of them.
func TestStableUnderChange(t *testing.T) {
	g := newSBM(3, 10_000, 500, 8, 2)
	first := detect(t, g.n, g.src, g.dst, Params{})
	ids, next := Stable(first.Community, len(first.Sizes), nil, 1)

	r := rand.New(rand.NewPCG(4, 4))
	src, dst := slices.Clone(g.src), slices.Clone(g.dst)
	change := len(src) / 100
	for range change { // rewire: a random edge gets random ends
		i := r.IntN(len(src))
		src[i], dst[i] = uint32(r.IntN(int(g.n))), uint32(r.IntN(int(g.n)))
	}
	second := detect(t, g.n, src, dst, Params{})
	ids2, _ := Stable(second.Community, len(second.Sizes), ids, next)

	kept := 0
	members, stayed := map[int32]int{}, map[int32]int{}
	for v := range ids {
		members[ids[v]]++
		if ids[v] == ids2[v] {
			kept++
			stayed[ids[v]]++
		}
	}
	t.Logf("%d of %d edges rewired; %d of %d nodes keep their id", change, len(src), kept, len(ids))
	if kept*100 < len(ids)*95 {
		t.Errorf("%d of %d nodes keep their community id, want at least 95%%", kept, len(ids))
	}
	for id, n := range members {
		if n >= 100 && 2*stayed[id] <= n {
			t.Errorf("community %d: %d of its %d members keep its id, want most", id, stayed[id], n)
		}
	}
}
