package kway

import (
	"slices"
	"testing"
)

// Merging sorted sources through the frontier gives every item in order,
// whatever the sources' sizes; HeadFirst says when the top may go on.
func TestMerge(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sources [][]int
	}{
		{"none", nil},
		{"one", [][]int{{1, 2, 3}}},
		{"empty sources", [][]int{{}, {2}, {}}},
		{"interleaved", [][]int{{1, 4, 7}, {2, 5, 8}, {3, 6, 9}}},
		{"runs", [][]int{{1, 2, 3, 10}, {4, 5, 6}, {0, 11}}},
		{"equal items", [][]int{{1, 1, 2}, {1, 2, 2}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pos := make([]int, len(tc.sources))
			h := New(func(a, b int) bool { return tc.sources[a][pos[a]] < tc.sources[b][pos[b]] })
			var want []int
			for k, s := range tc.sources {
				want = append(want, s...)
				if len(s) > 0 {
					h.Add(k)
				}
			}
			slices.Sort(want)
			var got []int
			for h.Len() > 0 {
				k := h.Top()
				got = append(got, tc.sources[k][pos[k]])
				pos[k]++
				if pos[k] == len(tc.sources[k]) {
					h.Drop()
					continue
				}
				if h.HeadFirst() {
					if next := tc.sources[k][pos[k]]; h.Len() > 1 && next > got[len(got)-1] {
						// the top stays first: no other source's item is smaller
						for j, s := range tc.sources {
							if j != k && pos[j] < len(s) && s[pos[j]] < next {
								t.Fatalf("HeadFirst with source %d at %d before %d", j, s[pos[j]], next)
							}
						}
					}
					continue
				}
				h.Fix()
			}
			if !slices.Equal(got, want) {
				t.Errorf("merged %v, want %v", got, want)
			}
		})
	}
}
