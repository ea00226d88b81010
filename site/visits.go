package site

import (
	"cmp"
	"fmt"
	"github.com/mapthenet/mapthenet/snapshot"
	"math"
	"slices"
	"strings"
	"time"
)

// visitColumns are each domain's recent visits, newest first, at most
// maxVisits a domain (what its page shows), kept in memory as columns so
// that a page reads no file: row r's are entries from[r] to
// from[r]+count[r]-1.
type visitColumns struct {
	from              []uint32
	count             []uint8
	started, finished []int64 // Unix microseconds
	outcome           []uint32
	status, pages     []int32
	bytes             []int64
	errStr            []int32 // index into strs; -1: none
}

// visit is one visit while loading.
type visit struct {
	started, finished int64
	outcome           uint32
	status, pages     int32
	bytes             int64
	errStr            int32
}

func (v *visitColumns) at(i uint32) visit {
	return visit{v.started[i], v.finished[i], v.outcome[i], v.status[i], v.pages[i], v.bytes[i], v.errStr[i]}
}

// keep stores the newest maxVisits of a domain's visits (given in file
// order; the same start time keeps that order).
func (v *visitColumns) keep(row int32, vs []visit) error {
	slices.SortStableFunc(vs, func(a, b visit) int { return cmp.Compare(b.started, a.started) })
	vs = vs[:min(len(vs), maxVisits)]
	if len(v.started) > math.MaxUint32-maxVisits {
		return fmt.Errorf("%w: more than %d visits", ErrTooBig, uint32(math.MaxUint32-maxVisits))
	}
	v.from[row], v.count[row] = uint32(len(v.started)), uint8(len(vs))
	for _, x := range vs {
		v.started, v.finished = append(v.started, x.started), append(v.finished, x.finished)
		v.outcome, v.status, v.pages = append(v.outcome, x.outcome), append(v.status, x.status), append(v.pages, x.pages)
		v.bytes, v.errStr = append(v.bytes, x.bytes), append(v.errStr, x.errStr)
	}
	return nil
}

// loadVisits keeps each domain's recent visits. visits.parquet is stored
// by domain, so each domain's rows are one run and only one run is held
// at a time; a file in another order still reads right (a domain met
// again has its kept visits merged with the new ones).
func (ix *Index) loadVisits(src *source, in *interner) error {
	v := &ix.visits
	v.from, v.count = make([]uint32, ix.n), make([]uint8, ix.n)
	t, err := src.visits()
	if err != nil {
		return err
	}
	defer t.close()
	// Room for every row, or three a domain if fewer (at most ten are
	// kept; the columns grow past three a domain if need be).
	if c := min(t.rows(), 3*ix.n); c > 0 {
		v.started, v.finished, v.bytes = make([]int64, 0, c), make([]int64, 0, c), make([]int64, 0, c)
		v.outcome, v.status, v.pages, v.errStr = make([]uint32, 0, c), make([]int32, 0, c), make([]int32, 0, c), make([]int32, 0, c)
	}
	var run []visit
	row, name, started := int32(-1), "", false
	flush := func() error {
		if row < 0 || len(run) == 0 {
			return nil
		}
		if c := uint32(v.count[row]); c > 0 { // met before: merge
			old := make([]visit, 0, int(c)+len(run))
			for i := v.from[row]; i < v.from[row]+c; i++ {
				old = append(old, v.at(i))
			}
			run = append(old, run...)
		}
		err := v.keep(row, run)
		run = run[:0]
		return err
	}
	err = t.scan(1, func(b *visitBatch) error {
		intern := in.cached()
		for i, start := range b.StartedAt {
			if d := b.Domain.str(i); !started || d != name {
				if err := flush(); err != nil {
					return err
				}
				started, name, row = true, strings.Clone(d), ix.Find(d)
			}
			if row < 0 {
				continue
			}
			x := visit{started: start, finished: b.FinishedAt[i], outcome: intern(b.Outcome.str(i)), status: b.HTTPStatus[i],
				pages: b.Pages[i], bytes: b.Bytes[i], errStr: -1}
			if !b.Error.nulls[i] {
				x.errStr = int32(min(in.intern(b.Error.str(i)), math.MaxInt32))
			}
			run = append(run, x)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// recentVisits are the domain's recent visits, newest first.
func (ix *Index) recentVisits(r int32) []snapshot.VisitJSON {
	v := &ix.visits
	out := make([]snapshot.VisitJSON, v.count[r])
	for k := range out {
		i := v.from[r] + uint32(k)
		out[k] = snapshot.VisitJSON{StartedAt: time.UnixMicro(v.started[i]).UTC(), FinishedAt: time.UnixMicro(v.finished[i]).UTC(),
			Outcome: ix.strs[v.outcome[i]], HTTPStatus: v.status[i], Pages: v.pages[i], Bytes: v.bytes[i]}
		if e := v.errStr[i]; e >= 0 {
			out[k].Error = &ix.strs[e]
		}
	}
	return out
}
