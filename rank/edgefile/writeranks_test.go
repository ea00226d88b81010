package edgefile

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestSortByName: the ids come out in their names' byte order, long
// shared prefixes, short names and bytes above 0x7f included, for any
// workers.
func TestSortByName(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var names []string
	for i := range 200_000 {
		switch i % 4 {
		case 0:
			names = append(names, fmt.Sprintf("sameprefix-%d.com", r.IntN(1e9)))
		case 1:
			names = append(names, fmt.Sprintf("%c", 'a'+i%26)+strings.Repeat("x", i%3)+fmt.Sprint(i))
		case 2:
			names = append(names, fmt.Sprintf("d%d.com", i))
		default:
			names = append(names, "\xe4"+fmt.Sprint(r.IntN(1e9), i))
		}
	}
	nms, err := NamesOf(names)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1, 2} {
		ids := make([]uint32, len(names))
		for i := range ids {
			ids[i] = uint32(i)
		}
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		sortByName(ids, nms, w)
		if !slices.IsSortedFunc(ids, func(a, b uint32) int { return strings.Compare(names[a], names[b]) }) {
			t.Fatalf("workers %d: not in name order", w)
		}
	}
}
