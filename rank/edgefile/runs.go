package edgefile

import (
	"math"

	"github.com/mapthenet/mapthenet/internal/parallel"
)

// Run is N successive edges (rows) of an edge list whose source is ID.
// Edges keeps the sources of its rows as runs rather than an id a row:
// edge files are mostly grouped by source (a snapshot's, DuckDB's ORDER
// BY, Common Crawl's), so that graphgen's L file of 100 million rows has
// 6.5 million runs once its nofollow rows are dropped, 52 MB where the ids
// took 400 MB of memory written for the first time (dear on a virtual
// machine: see the comment on rank's collect), and the counts and
// placements that read the sources look up each source once a run. A
// file in no order has runs of one row: 8 bytes a row rather than 4,
// within RowBytes.
type Run struct{ ID, N uint32 }

// appendRun appends n rows of source id to runs, lengthening the last run
// when it has the same source.
func appendRun(runs []Run, id uint32, n int) []Run {
	for n > 0 {
		if k := len(runs) - 1; k >= 0 && runs[k].ID == id && runs[k].N < math.MaxUint32 {
			add := min(n, int(math.MaxUint32-runs[k].N))
			runs[k].N += uint32(add)
			n -= add
			continue
		}
		add := min(n, math.MaxUint32)
		runs = append(runs, Run{id, uint32(add)})
		n -= add
	}
	return runs
}

// RunsOf is the runs of a list of sources, one a row: counted first, then
// made a run at a time (appendRun a row at a time cost 13 ns a row).
func RunsOf(src []uint32) []Run {
	n := min(len(src), 1)
	for i := 1; i < len(src); i++ {
		if src[i] != src[i-1] {
			n++
		}
	}
	runs := make([]Run, 0, n)
	for i := 0; i < len(src); {
		j := i + 1
		for j < len(src) && src[j] == src[i] && j-i < math.MaxUint32 {
			j++
		}
		runs = append(runs, Run{src[i], uint32(j - i)})
		i = j
	}
	return runs
}

// followed drops the rows that are no edge (nofollow or self-loop) from
// runs and dst, in place, and returns what is left. Each of up to workers
// parts compacts its own stretch of runs (and their rows), then the
// stretches are moved together.
func followed(runs []Run, dst []uint32, workers int) ([]Run, []uint32) {
	parts := max(1, min(workers, len(dst)/(1<<20), len(runs)))
	// Part k is runs cut[k]..cut[k+1]-1, rows row[k]..row[k+1]-1.
	cut, row := make([]int, parts+1), make([]int, parts+1)
	for k := range parts + 1 {
		cut[k] = k * len(runs) / parts
	}
	at := 0
	for k := range parts {
		row[k] = at
		for _, r := range runs[cut[k]:cut[k+1]] {
			at += int(r.N)
		}
	}
	row[parts] = at
	keptRuns, keptRows := make([]int, parts), make([]int, parts)
	parallel.Run(parts, func(k int) {
		// kept grows in place over the runs already read: it never holds
		// more runs than have been read (appendRun adds at most one).
		w, i, kept := row[k], row[k], runs[cut[k]:cut[k]]
		for _, r := range runs[cut[k]:cut[k+1]] {
			start := w
			for _, t := range dst[i : i+int(r.N)] {
				if t != NoEdge && t != r.ID {
					dst[w] = t
					w++
				}
			}
			i += int(r.N)
			kept = appendRun(kept, r.ID, w-start)
		}
		keptRuns[k], keptRows[k] = len(kept), w-row[k]
	})
	nr, nd := 0, 0
	for k := range parts {
		nr += copy(runs[nr:], runs[cut[k]:cut[k]+keptRuns[k]])
		nd += copy(dst[nd:], dst[row[k]:row[k]+keptRows[k]])
	}
	return runs[:nr], dst[:nd]
}
