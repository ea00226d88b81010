package schedule

import (
	"cmp"
	"slices"

	"github.com/mapthenet/mapthenet/data"
)

// Two orders: schedule.parquet lists rows by time (CompareSchedule), and
// a crawl takes the rows due now by linking domains (CompareDue), as it
// takes the domains a run finds (CompareFound). Both put, among domains
// due at one time, the most linked-to first: DESIGN.md's "those with the
// most linking domains go first".

// CompareSchedule is schedule.parquet's order: soonest first, then highest
// priority (linking domains), then by name.
func CompareSchedule(a, b data.ScheduleRow) int {
	if c := a.NextVisit.Compare(b.NextVisit); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	return cmp.Compare(a.Domain, b.Domain)
}

// CompareDue orders the rows due now as the crawl takes them: highest
// priority (linking domains) first, then the longest overdue, then by name.
func CompareDue(a, b data.ScheduleRow) int {
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	if c := a.NextVisit.Compare(b.NextVisit); c != 0 {
		return c
	}
	return cmp.Compare(a.Domain, b.Domain)
}

// CompareFound orders never-visited domains a crawl found during its run,
// as CompareDue orders due rows: most linking domains first, then by name.
func CompareFound(aLinking int, aDomain string, bLinking int, bDomain string) int {
	if c := cmp.Compare(bLinking, aLinking); c != 0 {
		return c
	}
	return cmp.Compare(aDomain, bDomain)
}

// Sort sorts rows by CompareSchedule. A million rows of 70 bytes sort
// several times faster by a small key (the time as seconds and
// nanoseconds, the priority, the row's index) than by moving the rows
// themselves; names are compared only where time and priority tie.
func Sort(rows []data.ScheduleRow) {
	type key struct {
		sec      int64
		nsec     int32
		idx      int32
		priority int64
	}
	keys := make([]key, len(rows))
	for i := range rows {
		t := rows[i].NextVisit
		keys[i] = key{sec: t.Unix(), nsec: int32(t.Nanosecond()), idx: int32(i), priority: rows[i].Priority}
	}
	slices.SortFunc(keys, func(a, b key) int {
		if c := cmp.Compare(a.sec, b.sec); c != 0 {
			return c
		}
		if c := cmp.Compare(a.nsec, b.nsec); c != 0 {
			return c
		}
		if c := cmp.Compare(b.priority, a.priority); c != 0 {
			return c
		}
		return cmp.Compare(rows[a.idx].Domain, rows[b.idx].Domain)
	})
	// The rows moved into their order in place, a cycle of the
	// permutation at a time, rather than through a sorted copy (a second
	// 70 bytes a row: 700 MB for a rebuild of 10M domains). A key whose
	// idx is its own position is done.
	for i := range keys {
		if int(keys[i].idx) == i {
			continue
		}
		first := rows[i]
		j := i
		for {
			k := int(keys[j].idx)
			keys[j].idx = int32(j)
			if k == i {
				rows[j] = first
				break
			}
			rows[j] = rows[k]
			j = k
		}
	}
}
