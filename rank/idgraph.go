package rank

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"github.com/mapthenet/mapthenet/internal/parallel"
	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// IDGraphOptions are ReadIDGraph's options.
type IDGraphOptions struct {
	// Nodes is the number of nodes. 0: one more than the largest id in
	// the file (its footer's statistics, or a pass over the ids when it
	// has none). Required with Dense.
	Nodes uint32
	// Dense, when not nil, maps the file's ids to nodes (-1: no node; an
	// edge naming such an id is an error), one id a node at most. When it
	// increases over the ids it maps, the file's order is the nodes'
	// order; when not, each node's sources are sorted once placed.
	Dense []int32
	// Workers read stretches of the file at once: <= 0 means GOMAXPROCS.
	// The graph is the same for any number.
	Workers int
	// Progress, when not nil, is called about every ProgressEvery with
	// the pass (1: counting, 2: placing), the rows read in it and the
	// file's rows.
	Progress      func(pass int, done, total int64)
	ProgressEvery time.Duration

	passDone func(pass int, rows int64) // RankIDFile's stage timing
}

// IDGraph is what ReadIDGraph returns besides the graph.
type IDGraph struct {
	Rows     int64 // rows read, nofollow included
	Followed int64 // followed rows: the graph's edges
}

// maxIDParts bounds the stretches ReadIDGraph reads at once: each costs 4
// bytes a node (its write cursors).
const maxIDParts = 4

// ReadIDGraph builds the in-edge CSR of the followed edges of an edge file
// of dense ids (the snapshot's edges.parquet: src_id, dst_id, sorted by
// (src_id, dst_id), no pair twice, no self-loop, and nofollow: only the
// rows where it is false count) in two passes over the file, without
// holding its edges or any name: the first counts in-degrees (and
// out-degrees), the second places each source under its target. Peak
// memory is the graph (4 bytes an edge, 8 a node) and 4 bytes a node for
// each stretch of the file read at once (at most 4, one per worker); the
// file's order puts each node's sources in increasing order as they are
// placed, so there is nothing to sort. The graph is the one BuildCSR
// makes of the same edges, bit for bit.
//
// The contract is checked as the rows stream by: an id out of range, a
// row out of order or repeated, a self-loop is an error naming the row,
// before the graph is allocated; so is a file that changed between the
// two passes.
func ReadIDGraph(ctx context.Context, path string, o IDGraphOptions) (*CSR, IDGraph, error) {
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	f, err := edgefile.OpenIDs(path)
	if err != nil {
		return nil, IDGraph{}, err
	}
	info := IDGraph{Rows: f.Rows()}
	n, sorted, err := idGraphNodes(ctx, f, path, o, workers)
	if err != nil {
		return nil, IDGraph{}, err
	}
	parts := len(f.Parts(min(workers, maxIDParts))) - 1

	// Pass 1: check the rows, count in-degrees per part, out-degrees.
	st := make([]idPart, parts)
	counts := make([][]uint32, parts)
	parallel.Run(parts, func(k int) { counts[k] = makeLarge[uint32](int(n), int(n)) })
	outdeg := makeLarge[uint32](int(n), int(n))
	prog := newIDProgress(o, 1, f.Rows())
	err = f.Scan(ctx, parts, true, func(k int, b *edgefile.IDBatch) error {
		prog.add(k, len(b.Dst))
		return st[k].count(path, n, o.Dense, b, counts[k], outdeg)
	})
	if err != nil {
		return nil, IDGraph{}, err
	}
	for k := range st {
		if st[k].inRun {
			st[k].endRun(outdeg)
		}
	}
	for k := range st {
		if st[k].rows == 0 {
			continue
		}
		if st[k].firstCount > 0 {
			outdeg[st[k].firstSrc] += st[k].firstCount
		}
		info.Followed += st[k].followed
		if k > 0 && st[k-1].rows > 0 && !less(st[k-1].last, st[k].first) {
			return nil, IDGraph{}, orderError(path, st[k].firstRow, st[k].first, st[k-1].last)
		}
	}

	if o.passDone != nil {
		o.passDone(1, info.Rows)
	}

	// Offsets, and each part's first slot within each node's in-edges.
	deg := makeLarge[uint32](int(n)+1, int(n)+1)
	parallel.Run(parts, func(k int) {
		lo, hi := k*int(n)/parts, (k+1)*int(n)/parts
		for v := lo; v < hi; v++ {
			var d uint32 // a node has fewer than 2³² in-edges: no pair twice
			for _, c := range counts {
				x := c[v]
				c[v] = d
				d += x
			}
			deg[v] = d
		}
	})
	g := &CSR{N: n, OutDegree: outdeg, offsets: offsetsOfDegrees(deg)}
	total := g.offsets.total()
	if total != uint64(info.Followed) {
		return nil, IDGraph{}, fmt.Errorf("rank: %s: %d followed edges counted, %d in-degrees", path, info.Followed, total)
	}
	g.Sources = makeLarge[uint32](int(total), int(total))

	// Pass 2: place the sources, in file order.
	abs := absoluteCursors(g, counts, nil)
	check := make([]idPart, parts)
	prog = newIDProgress(o, 2, f.Rows())
	err = f.Scan(ctx, parts, true, func(k int, b *edgefile.IDBatch) error {
		prog.add(k, len(b.Dst))
		return check[k].place(path, g, n, o.Dense, b, counts[k], abs)
	})
	if err != nil {
		return nil, IDGraph{}, err
	}
	for k := range st {
		if check[k].followed != st[k].followed || check[k].sum != st[k].sum {
			return nil, IDGraph{}, fmt.Errorf("rank: %s changed while it was read (its edges differ between two passes)", path)
		}
	}
	if !sorted {
		g.sortSources(workers)
	}
	return g, info, nil
}

// idGraphNodes is the graph's number of nodes, and whether the file's
// order puts each node's sources in order (Dense increases).
func idGraphNodes(ctx context.Context, f *edgefile.IDFile, path string, o IDGraphOptions, workers int) (uint32, bool, error) {
	if o.Dense != nil {
		if o.Nodes == 0 && len(o.Dense) > 0 {
			return 0, false, errors.New("rank: ReadIDGraph: Dense needs Nodes")
		}
		prev, sorted := int64(-1), true
		for _, d := range o.Dense {
			if d < 0 {
				continue
			}
			if uint32(d) >= o.Nodes {
				return 0, false, fmt.Errorf("rank: ReadIDGraph: the id map names node %d of %d", d, o.Nodes)
			}
			sorted = sorted && int64(d) > prev
			prev = int64(d)
		}
		if !sorted {
			seen := make([]bool, o.Nodes)
			for _, d := range o.Dense {
				if d >= 0 && seen[d] {
					return 0, false, fmt.Errorf("rank: ReadIDGraph: the id map gives node %d twice", d)
				} else if d >= 0 {
					seen[d] = true
				}
			}
		}
		return o.Nodes, sorted, nil
	}
	if o.Nodes > 0 {
		return o.Nodes, true, nil
	}
	maxID := f.MaxID()
	if maxID < 0 && f.Rows() > 0 {
		// No statistics: one pass over the ids for the largest.
		highest := make([]int64, len(f.Parts(workers))-1)
		err := f.Scan(ctx, workers, true, func(k int, b *edgefile.IDBatch) error {
			m := highest[k]
			for i, s := range b.Src {
				m = max(m, int64(s), int64(b.Dst[i]))
			}
			highest[k] = m
			return nil
		})
		if err != nil {
			return 0, false, err
		}
		maxID = slices.Max(highest)
	}
	if maxID >= math.MaxUint32 {
		return 0, false, fmt.Errorf("rank: %s: its largest id, %d, is not below 2³²-1", path, maxID)
	}
	return uint32(maxID + 1), true, nil
}

// idPart is what one pass learns of one stretch of the file.
type idPart struct {
	rows        int64
	firstRow    int64
	first, last [2]uint32 // the stretch's first and last (src_id, dst_id)
	followed    int64
	sum         uint64 // a checksum of the followed edges, to tell the two passes apart

	// Out-degree runs: the file is sorted by source, so a source's rows
	// are one run. A stretch's first source may continue the stretch
	// before's last: its count is added after both are done.
	inRun      bool
	src        uint32 // the current run's source
	run        uint32 // its followed edges so far
	runs       int
	firstSrc   uint32
	firstCount uint32
}

func less(a, b [2]uint32) bool { return a[0] < b[0] || a[0] == b[0] && a[1] < b[1] }

// edgeSum is one edge's share of idPart.sum.
func edgeSum(s, t uint32) uint64 {
	x := uint64(s)<<32 | uint64(t)
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x
}

// count checks a batch's rows (pass 1), counts the followed ones into
// in (in-degrees) and out (out-degrees, by run) and sums them.
func (st *idPart) count(path string, n uint32, dense []int32, b *edgefile.IDBatch, in, out []uint32) error {
	if len(b.Dst) == 0 {
		return nil
	}
	if st.rows == 0 {
		st.firstRow = b.Row
		st.first = [2]uint32{b.Src[0], b.Dst[0]}
		st.last = st.first
	}
	prev := st.last
	for i, s := range b.Src {
		t := b.Dst[i]
		if s < prev[0] || s == prev[0] && t <= prev[1] {
			if st.rows > 0 || i > 0 {
				return st.checkRow(path, n, dense, b, i, true)
			}
		}
		prev = [2]uint32{s, t}
		if s == t {
			return st.checkRow(path, n, dense, b, i, false)
		}
		if dense != nil {
			if int(s) >= len(dense) || int(t) >= len(dense) || dense[s] < 0 || dense[t] < 0 {
				return st.checkRow(path, n, dense, b, i, false)
			}
			s, t = uint32(dense[s]), uint32(dense[t])
		}
		if s >= n || t >= n {
			return st.checkRow(path, n, dense, b, i, false)
		}
		if !st.inRun {
			st.src, st.inRun = s, true
		} else if s != st.src {
			st.endRun(out)
			st.src = s
		}
		if b.Nofollow != nil && b.Nofollow[i] {
			continue
		}
		in[t]++
		st.run++
		st.followed++
		st.sum += edgeSum(s, t)
	}
	st.last = prev
	st.rows += int64(len(b.Dst))
	return nil
}

// endRun ends the current out-degree run.
func (st *idPart) endRun(out []uint32) {
	if st.runs == 0 {
		st.firstSrc, st.firstCount = st.src, st.run
	} else {
		out[st.src] = st.run
	}
	st.runs++
	st.run = 0
}

// checkRow returns the error of row i of b (order: it comes out of
// order after the row before it).
func (st *idPart) checkRow(path string, n uint32, dense []int32, b *edgefile.IDBatch, i int, order bool) error {
	s, t := b.Src[i], b.Dst[i]
	row := b.Row + int64(i)
	switch {
	case order:
		prev := st.last
		if i > 0 {
			prev = [2]uint32{b.Src[i-1], b.Dst[i-1]}
		}
		return orderError(path, row, [2]uint32{s, t}, prev)
	case s == t:
		return fmt.Errorf("rank: %s: row %d: src_id = dst_id = %d: a self-loop, which an edge file of ids must not have", path, row, s)
	case dense != nil:
		for _, id := range []uint32{s, t} {
			if int(id) >= len(dense) || dense[id] < 0 {
				return fmt.Errorf("rank: %s: row %d: id %d names no domain", path, row, id)
			}
		}
	case s >= n || t >= n:
		return fmt.Errorf("rank: %s: row %d: (src_id, dst_id) = (%d, %d): ids must be below %d", path, row, s, t, n)
	}
	return nil
}

// orderError is the error of a row (src_id, dst_id) = cur after prev.
func orderError(path string, row int64, cur, prev [2]uint32) error {
	what := "out of order"
	if cur == prev {
		what = "repeated"
	}
	return fmt.Errorf("rank: %s: row %d: (src_id, dst_id) = (%d, %d) %s after (%d, %d): the rows must be sorted by (src_id, dst_id), each pair once",
		path, row, cur[0], cur[1], what, prev[0], prev[1])
}

// place puts a batch's followed edges (pass 2) under their targets from
// the part's cursors, checking ids again (the file may have changed).
func (st *idPart) place(path string, g *CSR, n uint32, dense []int32, b *edgefile.IDBatch, cur []uint32, abs bool) error {
	out := g.Sources
	size := uint64(len(out))
	for i, s := range b.Src {
		if b.Nofollow != nil && b.Nofollow[i] {
			continue
		}
		t := b.Dst[i]
		if dense != nil {
			if int(s) >= len(dense) || int(t) >= len(dense) || dense[s] < 0 || dense[t] < 0 {
				return fmt.Errorf("rank: %s changed while it was read: row %d", path, b.Row+int64(i))
			}
			s, t = uint32(dense[s]), uint32(dense[t])
		}
		if s >= n || t >= n || s == t {
			return fmt.Errorf("rank: %s changed while it was read: row %d", path, b.Row+int64(i))
		}
		at := uint64(cur[t])
		if !abs {
			at += g.offsets.start(t)
		}
		if at >= size {
			return fmt.Errorf("rank: %s changed while it was read: row %d", path, b.Row+int64(i))
		}
		out[at] = s
		cur[t]++
		st.followed++
		st.sum += edgeSum(s, t)
	}
	return nil
}

// idProgress reports ReadIDGraph's progress from part 0's goroutine.
type idProgress struct {
	o     IDGraphOptions
	pass  int
	total int64
	done  atomic.Int64
	last  time.Time
}

func newIDProgress(o IDGraphOptions, pass int, total int64) *idProgress {
	return &idProgress{o: o, pass: pass, total: total, last: time.Now()}
}

func (p *idProgress) add(part, rows int) {
	d := p.done.Add(int64(rows))
	if p.o.Progress == nil || part != 0 || time.Since(p.last) < p.o.ProgressEvery {
		return
	}
	p.last = time.Now()
	p.o.Progress(p.pass, d, p.total)
}
