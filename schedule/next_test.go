package schedule

import (
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// TestNext: every branch of a domain's next visit, under the default
// threshold and a higher one, with a table whose lowest tier is not
// DESIGN.md's.
func TestNext(t *testing.T) {
	asOf := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	last := asOf.Add(-5 * day)
	tiers := Tiers{
		{Number: 1, MaxRank: 10, RevisitDays: 7, Pages: 30},
		{Number: 2, MaxRank: 0, RevisitDays: 100, Pages: 3},
	}
	top, low := tiers[0], tiers[1]
	visited := func(o data.Outcome, failures int) *data.DomainState {
		return &data.DomainState{Name: "a.example", LastVisit: last, LastOutcome: o, Failures: failures}
	}
	never := func(followed, seeded bool) *data.DomainState {
		return &data.DomainState{Name: "a.example", FollowedIn: followed, Seeded: seeded}
	}
	recorded := visited(data.OutcomeThrottled, 1)
	recorded.RetryAt = last.Add(7 * time.Hour) // as a format 2 store recorded it
	tests := []struct {
		name      string
		st        *data.DomainState
		tier      data.Tier
		inDomains int64
		min       int
		ok        bool
		reason    string
		next      time.Time
		pages     int32
	}{
		{"revisit by tier", visited(data.OutcomeOK, 0), top, 4, 0, true, data.ReasonRevisit, last.Add(7 * day), 30},
		{"partial revisits too", visited(data.OutcomePartial, 0), low, 0, 0, true, data.ReasonRevisit, last.Add(100 * day), 3},
		{"gone revisits by tier", visited(data.OutcomeGone, 0), low, 0, 0, true, data.ReasonRevisit, last.Add(100 * day), 3},
		{"first timeout: a day", visited(data.OutcomeTimeout, 1), top, 4, 0, true, data.ReasonRetry, last.Add(day), 30},
		{"third DNS failure: 4 days", visited(data.OutcomeDNSError, 3), top, 4, 0, true, data.ReasonRetry, last.Add(4 * day), 30},
		{"block: 90 days", visited(data.OutcomeBotProtection, 1), low, 0, 0, true, data.ReasonRetry, last.Add(90 * day), 3},
		{"no failure count: as the first", visited(data.OutcomeThrottled, 0), low, 0, 0, true, data.ReasonRetry, last.Add(time.Hour), 3},
		{"recorded retry time stands", recorded, low, 0, 0, true, data.ReasonRetry, last.Add(7 * time.Hour), 3},
		{"never visited, linked", never(true, false), low, 1, 0, true, data.ReasonNew, asOf, 3},
		{"never visited, ranked high, lowest tier's pages", never(true, false), top, 9, 0, true, data.ReasonNew, asOf, 3},
		{"never visited, linked once before", never(true, false), low, 0, 0, true, data.ReasonNew, asOf, 3},
		{"seed", never(false, true), low, 0, 5, true, data.ReasonNew, asOf, 3},
		{"nofollow links only", never(false, false), low, 0, 0, false, "", time.Time{}, 0},
		{"threshold 2, one linking domain", never(true, false), low, 1, 2, false, "", time.Time{}, 0},
		{"threshold 2, linked once before", never(true, false), low, 0, 2, false, "", time.Time{}, 0},
		{"threshold 2, two linking domains", never(true, false), low, 2, 2, true, data.ReasonNew, asOf, 3},
		{"threshold 2 does not hold back revisits", visited(data.OutcomeOK, 0), low, 0, 2, true, data.ReasonRevisit, last.Add(100 * day), 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			row, ok := Policy{Tiers: tiers, MinInDomains: tc.min}.Next(tc.st, tc.tier, tc.inDomains, asOf)
			if ok != tc.ok {
				t.Fatalf("ok %v, want %v (%+v)", ok, tc.ok, row)
			}
			if !ok {
				return
			}
			if row.Reason != tc.reason || !row.NextVisit.Equal(tc.next) || row.Pages != tc.pages ||
				row.Tier != int32(tc.tier.Number) || row.Priority != tc.inDomains || row.Domain != "a.example" {
				t.Errorf("%+v, want %s at %v, %d pages, tier %d, priority %d", row, tc.reason, tc.next, tc.pages, tc.tier.Number, tc.inDomains)
			}
			if row.NextVisit.Location() != time.UTC {
				t.Errorf("next visit in %v, want UTC", row.NextVisit.Location())
			}
		})
	}
}

func TestDiscovered(t *testing.T) {
	for _, tc := range []struct {
		linking int64
		min     int
		want    bool
	}{{0, 0, false}, {1, 0, true}, {1, 1, true}, {1, 2, false}, {2, 2, true}, {5, 3, true}, {0, -1, false}} {
		if got := Discovered(tc.linking, tc.min); got != tc.want {
			t.Errorf("Discovered(%d, %d) = %v, want %v", tc.linking, tc.min, got, tc.want)
		}
	}
}

func TestRetryAt(t *testing.T) {
	last := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, st := range []data.DomainState{
		{}, // never visited
		{LastVisit: last, LastOutcome: data.OutcomeOK},
		{LastVisit: last, LastOutcome: data.OutcomeGone}, // not a failure: revisited by tier
	} {
		if got := RetryAt(&st); !got.IsZero() {
			t.Errorf("RetryAt(%+v) = %v, want none", st, got)
		}
	}
	st := data.DomainState{LastVisit: last, LastOutcome: data.OutcomeConnectError, Failures: 2}
	if got := RetryAt(&st); !got.Equal(last.Add(2 * day)) {
		t.Errorf("second connection failure: retry at %v, want two days on", got)
	}
}
