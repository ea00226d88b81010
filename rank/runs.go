package rank

import (
	"fmt"

	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// runPart is a stretch of an edge list whose sources are runs
// (edgefile.Run): rows lo..hi-1, of which row lo is row off of run first.
type runPart struct {
	lo, hi int
	first  int
	off    uint32
}

// cutRuns cuts the rows of runs into parts stretches, part k rows
// k*m/parts to (k+1)*m/parts-1, m the rows in all. It checks that the
// runs have m rows, as many as the targets.
func cutRuns(runs []edgefile.Run, m, parts int) ([]runPart, error) {
	total := 0
	for _, r := range runs {
		total += int(r.N)
	}
	if total != m {
		return nil, fmt.Errorf("rank: %d sources but %d targets", total, m)
	}
	ps := make([]runPart, parts)
	row, r := 0, 0 // row is the first row of run r
	for k := range parts {
		lo := k * m / parts
		for r < len(runs) && row+int(runs[r].N) <= lo {
			row += int(runs[r].N)
			r++
		}
		ps[k] = runPart{lo: lo, hi: (k + 1) * m / parts, first: r, off: uint32(lo - row)}
	}
	return ps, nil
}

// stop is the row after the rows of run r (which holds row, the first
// of them in the part) that are in the part. The loops over a part's
// runs are
//
//	for r, row := p.first, p.lo; row < p.hi; r++ {
//		next := p.stop(runs, r, row)
//		... source runs[r].ID, targets dst[row:next] ...
//		row = next
//	}
//
// written out rather than behind an iterator or a callback: with an
// iterator struct (too many fields to live in registers) BuildCSR took
// 60% longer on graphgen's S graph, its runs of 15 edges.
func (p runPart) stop(runs []edgefile.Run, r, row int) int {
	n := int(runs[r].N)
	if r == p.first {
		n -= int(p.off)
	}
	return min(row+n, p.hi)
}
