package schedule

import (
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// DefaultMinInDomains is the discovery threshold when none is configured:
// a never-visited domain is visited once one other domain links to it with
// a followed link.
const DefaultMinInDomains = 1

// Policy is the revisit policy as configured: one tier table and one
// discovery threshold, the same for the crawl and the rebuild.
type Policy struct {
	Tiers Tiers // nil: DefaultTiers
	// MinInDomains is the discovery threshold: a never-visited domain
	// (not a seed) is visited once this many domains link to it with a
	// followed link. 0: DefaultMinInDomains.
	MinInDomains int
}

// Discovered reports whether a never-visited domain that linking distinct
// domains link to (followed links) is due a first visit under the
// discovery threshold minInDomains (0: DefaultMinInDomains). The crawl
// applies it to the domains a run finds, counting the run's visits; the
// rebuild to every never-visited domain, counting the snapshot's in_domains.
func Discovered(linking int64, minInDomains int) bool {
	return linking >= int64(max(minInDomains, DefaultMinInDomains))
}

// Next decides when a domain is next due and why (DESIGN.md, "Revisit
// tiers", "Responses"); tier is its tier by rank (p.Tiers.For) and
// inDomains the distinct domains that link to it with a followed link:
//   - visited, last visit failed: at RetryAt (reason retry);
//   - visited otherwise: last visit + the tier's interval (revisit);
//   - never visited and seeded, or linked enough (Discovered; a domain
//     the store marks as ever linked by a followed link meets a threshold
//     of 1): due at asOf (new), read with the lowest tier's pages;
//   - never visited otherwise, known only through nofollow links or
//     linked by fewer than the threshold: no row (ok false).
//
// Priority is the number of distinct followed linking domains, so that
// among domains due at the same time the most linked-to go first.
func (p Policy) Next(st *data.DomainState, tier data.Tier, inDomains int64, asOf time.Time) (row data.ScheduleRow, ok bool) {
	row = data.ScheduleRow{
		Domain:   st.Name,
		Tier:     int32(tier.Number),
		Pages:    int32(tier.Pages),
		Priority: inDomains,
	}
	switch {
	case st.Visited() && st.LastOutcome.IsFailure():
		row.Reason = data.ReasonRetry
		row.NextVisit = RetryAt(st)
	case st.Visited():
		row.Reason = data.ReasonRevisit
		row.NextVisit = st.LastVisit.AddDate(0, 0, tier.RevisitDays)
	case st.Seeded || Discovered(inDomains, p.MinInDomains) ||
		st.FollowedIn && max(p.MinInDomains, DefaultMinInDomains) == 1:
		row.Reason = data.ReasonNew
		row.NextVisit = asOf
		row.Pages = int32(p.tiers().Lowest().Pages)
	default:
		return data.ScheduleRow{}, false
	}
	row.NextVisit = row.NextVisit.UTC()
	return row, true
}

func (p Policy) tiers() Tiers {
	if p.Tiers == nil {
		return DefaultTiers
	}
	return p.Tiers
}
