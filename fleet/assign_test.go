package fleet

import (
	"fmt"
	"slices"
	"testing"
)

// The assignment is part of the fleet's contract (every node must compute
// the same one, in every release): a fixed case pins the hash.
func TestAssignGolden(t *testing.T) {
	got := Assign([]string{"n3", "n1", "n2"}, nil, 8)
	want := goldenAssign
	if !slices.Equal(got, want) {
		t.Errorf("Assign(n1..n3, 8) = %q, want %q (changing it moves shards between releases)", got, want)
	}
	if got := Assign([]string{"n1", "n2", "n2", "n3"}, nil, 8); !slices.Equal(got, want) {
		t.Errorf("a duplicate name changed the assignment: %q", got)
	}
	if got := Assign(nil, nil, 3); !slices.Equal(got, []string{"", "", ""}) {
		t.Errorf("Assign(nil) = %q", got)
	}
	// Owners that are not live, or hold more than their share, do not keep.
	owners := []string{"gone", "n1", "n1", "n1", "n1", "n1", "n1", "n1"}
	got = Assign([]string{"n1", "n2", "n3"}, owners, 8)
	if c := count(got, "n1"); c != 3 || count(got, "gone") != 0 {
		t.Errorf("with owners %q: %q", owners, got)
	}
}

var goldenAssign = []string{"n3", "n1", "n3", "n3", "n1", "n1", "n2", "n2"}

func count(targets []string, node string) int {
	c := 0
	for _, t := range targets {
		if t == node {
			c++
		}
	}
	return c
}

// Loads stay even to within one, and a join or leave moves no more
// shards than it must: on a join the newcomer's share, on a leave the
// leaver's shards (measured over many random fleets, each step starting
// from the owners the previous one gave).
func TestAssignMoves(t *testing.T) {
	const trials = 100
	for _, tc := range []struct{ k, n int }{{8, 3}, {16, 4}, {64, 3}, {64, 8}} {
		even := (tc.k + tc.n - 1) / tc.n
		for tr := 0; tr < trials; tr++ {
			var nodes []string
			for i := 0; i < tc.n; i++ {
				nodes = append(nodes, fmt.Sprintf("node-%d-%d", tr, i))
			}
			before := Assign(nodes, nil, tc.k)
			for _, n := range nodes {
				if c := count(before, n); c > even || c < tc.k/tc.n {
					t.Fatalf("k=%d n=%d: node %s has %d shards, not within one of even", tc.k, tc.n, n, c)
				}
			}
			if again := Assign(nodes, before, tc.k); !slices.Equal(again, before) {
				t.Fatalf("k=%d n=%d: a settled assignment moves: %q -> %q", tc.k, tc.n, before, again)
			}
			newcomer := fmt.Sprintf("new-%d", tr)
			joined := Assign(append(slices.Clone(nodes), newcomer), before, tc.k)
			left := Assign(nodes[1:], before, tc.k)
			joinMoves, leaveMoves := 0, 0
			for s := range before {
				if before[s] != joined[s] {
					joinMoves++
					if joined[s] != newcomer {
						t.Fatalf("k=%d n=%d: on a join shard %d moved between old nodes", tc.k, tc.n, s)
					}
				}
				if before[s] != left[s] {
					leaveMoves++
					if before[s] != nodes[0] {
						t.Fatalf("k=%d n=%d: on a leave shard %d of a staying node moved", tc.k, tc.n, s)
					}
				}
			}
			if joinMoves != count(joined, newcomer) || joinMoves > (tc.k+tc.n)/(tc.n+1) {
				t.Fatalf("k=%d n=%d: a join moved %d shards", tc.k, tc.n, joinMoves)
			}
			if leaveMoves != count(before, nodes[0]) {
				t.Fatalf("k=%d n=%d: a leave moved %d shards, the leaver had %d", tc.k, tc.n, leaveMoves, count(before, nodes[0]))
			}
		}
	}
}
