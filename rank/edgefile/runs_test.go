package edgefile

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAppendRun: equal sources lengthen the last run, up to 2³²-1 rows a
// run; RunsOf and sourcesOf undo each other.
func TestAppendRun(t *testing.T) {
	runs := appendRun(nil, 7, 2)
	runs = appendRun(runs, 7, 3)
	runs = appendRun(runs, 8, 1)
	runs = appendRun(runs, 7, 0)
	if want := []Run{{7, 5}, {8, 1}}; !slices.Equal(runs, want) {
		t.Fatalf("runs %v, want %v", runs, want)
	}
	runs = appendRun(nil, 5, math.MaxUint32+10)
	runs = appendRun(runs, 5, 1)
	if want := []Run{{5, math.MaxUint32}, {5, 11}}; !slices.Equal(runs, want) {
		t.Fatalf("a run past 2³²-1 rows: %v, want %v", runs, want)
	}
	src := []uint32{3, 3, 1, 1, 1, 3, 2}
	if got := RunsOf(src); !slices.Equal(got, []Run{{3, 2}, {1, 3}, {3, 1}, {2, 1}}) {
		t.Fatalf("RunsOf %v = %v", src, got)
	}
	if got := sourcesOf(RunsOf(src)); !slices.Equal(got, src) {
		t.Fatalf("sourcesOf(RunsOf(%v)) = %v", src, got)
	}
}

// TestFollowed: followed keeps the rows whose target is neither NoEdge
// nor their source, in order, for any workers, with runs as long as they
// come (grouped) or of one row (shuffled).
func TestFollowed(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	const m = 3 << 20 // more than one part's worth (1<<20 rows) for 3 workers
	src, dst := make([]uint32, m), make([]uint32, m)
	for i := range m {
		src[i] = uint32(i / 40) // runs of 40
		switch r.IntN(10) {
		case 0:
			dst[i] = NoEdge
		case 1:
			dst[i] = src[i] // a self-loop
		default:
			dst[i] = r.Uint32N(m / 40)
		}
	}
	for _, grouped := range []bool{true, false} {
		if !grouped {
			r.Shuffle(m, func(i, j int) { src[i], src[j], dst[i], dst[j] = src[j], src[i], dst[j], dst[i] })
		}
		var wantSrc, wantDst []uint32
		for i := range m {
			if dst[i] != NoEdge && dst[i] != src[i] {
				wantSrc, wantDst = append(wantSrc, src[i]), append(wantDst, dst[i])
			}
		}
		for _, workers := range []int{1, 2, 3, 8} {
			t.Run(fmt.Sprintf("grouped %v workers %d", grouped, workers), func(t *testing.T) {
				runs, d := followed(RunsOf(src), slices.Clone(dst), workers)
				if got := sourcesOf(runs); !slices.Equal(got, wantSrc) || !slices.Equal(d, wantDst) {
					t.Fatalf("%d sources and %d targets kept, want %d", len(got), len(d), len(wantDst))
				}
				for i, run := range runs {
					if run.N == 0 || i > 0 && runs[i-1].ID == run.ID && workers == 1 {
						t.Fatalf("run %d: %+v after %+v", i, run, runs[max(i-1, 0)])
					}
				}
			})
		}
	}
	if runs, d := followed(nil, nil, 2); len(runs) != 0 || len(d) != 0 {
		t.Fatalf("no rows: %v, %v", runs, d)
	}
}

// sourcesOf is the sources of runs, one a row.
func sourcesOf(runs []Run) []uint32 {
	var src []uint32
	for _, r := range runs {
		for range r.N {
			src = append(src, r.ID)
		}
	}
	return src
}
