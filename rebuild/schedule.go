package rebuild

import (
	"cmp"
	"slices"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// scheduleFor decides when a domain is next due and why (DESIGN.md,
// "Revisit tiers", "Responses"):
//   - visited, last visit failed: at its retry time (reason retry);
//   - visited otherwise: last visit + the tier's interval (revisit);
//   - never visited, with a followed in-link (now or ever) or seeded: due
//     at asOf (new), read with the lowest tier's pages;
//   - never visited and known only through nofollow links: no row (ok false).
//
// Priority is the number of distinct followed linking domains, so that
// among domains due at the same time the most linked-to go first.
func scheduleFor(st *data.DomainState, tier data.Tier, lowest data.Tier, inDomains int64, asOf time.Time) (data.ScheduleRow, bool) {
	row := data.ScheduleRow{
		Domain:   st.Name,
		Tier:     int32(tier.Number),
		Pages:    int32(tier.Pages),
		Priority: inDomains,
	}
	switch {
	case st.Visited() && st.LastOutcome.IsFailure():
		row.Reason = data.ReasonRetry
		row.NextVisit = st.RetryAt
		if row.NextVisit.IsZero() {
			// The store records RetryAt with every failure; a state without
			// it (older store) gets the backoff recomputed.
			row.NextVisit = st.LastVisit.Add(data.RetryDelay(st.LastOutcome, max(st.Failures, 1), 0))
		}
	case st.Visited():
		row.Reason = data.ReasonRevisit
		row.NextVisit = st.LastVisit.AddDate(0, 0, tier.RevisitDays)
	case inDomains > 0 || st.FollowedIn || st.Seeded:
		row.Reason = data.ReasonNew
		row.NextVisit = asOf
		row.Pages = int32(lowest.Pages)
	default:
		return data.ScheduleRow{}, false
	}
	row.NextVisit = row.NextVisit.UTC()
	return row, true
}

// compareSchedule orders schedule rows as the crawl takes them: soonest
// first, then highest priority, then by name.
func compareSchedule(a, b data.ScheduleRow) int {
	if c := a.NextVisit.Compare(b.NextVisit); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
		return c
	}
	return cmp.Compare(a.Domain, b.Domain)
}

// CompareSchedule is compareSchedule for readers of schedule.parquet.
func CompareSchedule(a, b data.ScheduleRow) int { return compareSchedule(a, b) }

// sortSchedule sorts rows by compareSchedule. A million rows of 70 bytes
// sort several times faster by a small key (the time as seconds and
// nanoseconds, the priority, the row's index) than by moving the rows
// themselves; names are compared only where time and priority tie.
func sortSchedule(rows []data.ScheduleRow) {
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
	sorted := make([]data.ScheduleRow, len(rows))
	for i, k := range keys {
		sorted[i] = rows[k.idx]
	}
	copy(rows, sorted)
}
