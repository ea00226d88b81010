package rank

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestRanks(t *testing.T) {
	// 0 and 1 tie (both linked by 4 alone), 2 gets two links, 3 and 4
	// have no in-link.
	g := graph(t, 5, [][2]uint32{{4, 0}, {4, 1}, {3, 2}, {0, 2}})
	res, err := PageRank(context.Background(), g, DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	ranks, order, err := Ranks(g, res.Scores, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{2, 0, 1}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	if want := []uint32{2, 3, 1, 0, 0}; !slices.Equal(ranks, want) {
		t.Errorf("ranks %v, want %v", ranks, want)
	}
	// With names, ties go to the smaller name: "a.com" (1) before "b.com" (0).
	names := []string{"b.com", "a.com", "c.com", "d.com", "e.com"}
	ranks, order, err = Ranks(g, res.Scores, names)
	if err != nil {
		t.Fatal(err)
	}
	if want := []uint32{2, 1, 0}; !slices.Equal(order, want) {
		t.Errorf("with names: order %v, want %v", order, want)
	}
	if want := []uint32{3, 2, 1, 0, 0}; !slices.Equal(ranks, want) {
		t.Errorf("with names: ranks %v, want %v", ranks, want)
	}
	if _, _, err := Ranks(g, res.Scores[:2], nil); err == nil {
		t.Error("short scores: no error")
	}
	if _, _, err := Ranks(g, res.Scores, names[:2]); err == nil {
		t.Error("short names: no error")
	}
}

// TestRanksByScoreThenID checks the order of Ranks without names (the
// radix sort) against a comparison sort by score, then id, with many
// ties.
func TestRanksByScoreThenID(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{2, 10, 5000, 100_000} {
		scores := make([]float64, n)
		for i := range scores {
			scores[i] = float64(r.IntN(50)) * 1e-6 * r.Float64()
			if r.IntN(3) == 0 {
				scores[i] = 1e-7
			}
		}
		ids := make([]uint32, n)
		for i := range ids {
			ids[i] = uint32(i)
		}
		want := slices.Clone(ids)
		slices.SortFunc(want, func(a, b uint32) int {
			if scores[a] != scores[b] {
				if scores[a] > scores[b] {
					return -1
				}
				return 1
			}
			return int(a) - int(b)
		})
		var edges [][2]uint32 // a ring: every node is ranked
		for v := range n {
			edges = append(edges, [2]uint32{uint32((v + 1) % n), uint32(v)})
		}
		_, ids, err := Ranks(graph(t, uint32(n), edges), scores, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("n=%d: order differs", n)
		}
	}
}

// TestRanksTiesByName: with names, the order is a comparison sort's by
// score, then name, whatever the ids, with many ties.
func TestRanksTiesByName(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for _, n := range []int{3, 5000, 100_000} {
		scores := make([]float64, n)
		names := make([]string, n)
		var edges [][2]uint32
		for v := range n {
			scores[v] = float64(r.IntN(40)) * 1e-6
			names[v] = fmt.Sprintf("d%d.com", r.IntN(1<<30))
			edges = append(edges, [2]uint32{uint32((v + 1) % n), uint32(v)})
		}
		_, order, err := Ranks(graph(t, uint32(n), edges), scores, names)
		if err != nil {
			t.Fatal(err)
		}
		if len(order) != n {
			t.Fatalf("n=%d: %d ranked", n, len(order))
		}
		inOrder := slices.IsSortedFunc(order, func(a, b uint32) int {
			if c := cmp.Compare(scores[b], scores[a]); c != 0 {
				return c
			}
			return strings.Compare(names[a], names[b])
		})
		if !inOrder {
			t.Fatalf("n=%d: not by score, then name", n)
		}
	}
}
