package edgefile

import "fmt"

// edgeAssembler makes edges of interned batches. A batch's columns are
// not aligned (each holds whole pages of its own), so it keeps per row
// group the ids of the rows of each column not yet matched with the other
// columns, and makes edges of the rows all columns have reached. The
// batches of a row group come in order (one decoder reads it, and the
// shards pass batches on in the order they got them).
type edgeAssembler struct {
	set      *shardSet
	el       *Edges
	path     string
	firstRow []int64
	nofollow bool // the file has the column
	open     map[int]*rowGroupRows
	spare    []*rowGroupRows
}

// rowGroupRows are a row group's rows read in some column but not all.
type rowGroupRows struct {
	done     int64 // rows made edges of, from the row group's start
	src, dst []uint32
	nofollow []bool
}

func newEdgeAssembler(set *shardSet, el *Edges, path string, firstRow []int64, nofollow bool) *edgeAssembler {
	return &edgeAssembler{set: set, el: el, path: path, firstRow: firstRow, nofollow: nofollow, open: map[int]*rowGroupRows{}}
}

// add takes an interned batch and makes edges of the rows now complete.
func (a *edgeAssembler) add(r *batch) error {
	st := a.open[r.rg]
	if st == nil {
		if n := len(a.spare); n > 0 {
			st, a.spare = a.spare[n-1], a.spare[:n-1]
			*st = rowGroupRows{src: st.src[:0], dst: st.dst[:0], nofollow: st.nofollow[:0]}
		} else {
			st = &rowGroupRows{}
		}
		a.open[r.rg] = st
	}
	first := a.firstRow[r.rg] + st.done
	var err error
	if st.src, err = a.ids(st.src, r, 0, first+int64(len(st.src))); err != nil {
		return err
	}
	if st.dst, err = a.ids(st.dst, r, 1, first+int64(len(st.dst))); err != nil {
		return err
	}
	st.nofollow = append(st.nofollow, r.nofollow...)

	k := min(len(st.src), len(st.dst))
	if a.nofollow {
		k = min(k, len(st.nofollow))
	}
	el := a.el
	for i := range k {
		if a.nofollow && st.nofollow[i] {
			continue // the domains count, the edge does not
		}
		if s, t := st.src[i], st.dst[i]; s != t {
			el.Src = append(el.Src, s)
			el.Dst = append(el.Dst, t)
		}
	}
	el.Rows += int64(k)
	st.done += int64(k)
	st.src = st.src[:copy(st.src, st.src[k:])]
	st.dst = st.dst[:copy(st.dst, st.dst[k:])]
	if a.nofollow {
		st.nofollow = st.nofollow[:copy(st.nofollow, st.nofollow[k:])]
	}
	if st.done == a.firstRow[r.rg+1]-a.firstRow[r.rg] {
		delete(a.open, r.rg)
		a.spare = append(a.spare, st)
	}
	return nil
}

// finish checks that every row group was read to its end.
func (a *edgeAssembler) finish() error {
	for rg, st := range a.open {
		return fmt.Errorf("rank: %s: row group %d: read %d rows of %d", a.path, rg, st.done, a.firstRow[rg+1]-a.firstRow[rg])
	}
	return nil
}

// ids appends the ids of column c's names in batch r to ids, taking each
// from its shard's array; row is the file row of the batch's first name.
func (a *edgeAssembler) ids(ids []uint32, r *batch, c int, row int64) ([]uint32, error) {
	runs := r.src
	if c == 1 {
		runs = r.dst
	}
	byShard := r.ids[c]
	pos := 0
	for i := range runs {
		run := &runs[i]
		if d := run.dict; d != nil {
			for j, x := range run.idx {
				if x < 0 || int(x) >= len(d.ids) {
					return ids, fmt.Errorf("rank: %s: row %d: dictionary index %d out of range", a.path, row+int64(pos+j), x)
				}
				id := d.ids[x]
				if id == emptyName {
					return ids, fmt.Errorf("rank: %s: row %d: empty domain name", a.path, row+int64(pos+j))
				}
				ids = append(ids, id)
			}
		} else {
			for j, h := range r.hashes[run.h0 : run.h0+run.len()] {
				id := byShard[a.set.of(h)][pos+j]
				if id == emptyName {
					return ids, fmt.Errorf("rank: %s: row %d: empty domain name", a.path, row+int64(pos+j))
				}
				ids = append(ids, id)
			}
		}
		pos += run.len()
	}
	return ids, nil
}
