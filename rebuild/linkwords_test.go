package rebuild

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortUses: the two-part sort of link-word uses sorts, whatever the
// spread of targets (one target, two, many).
func TestSortUses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, targets := range []int{1, 2, 3, 1000} {
		uses := make([]uint64, 1<<17)
		for i := range uses {
			uses[i] = uint64(r.IntN(targets))<<32 | uint64(r.IntN(50))
		}
		want := slices.Clone(uses)
		slices.Sort(want)
		sortUses(uses)
		if !slices.Equal(uses, want) {
			t.Fatalf("%d targets: not sorted", targets)
		}
	}
}
