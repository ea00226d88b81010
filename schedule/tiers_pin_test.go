package schedule

import (
	"reflect"
	"testing"
)

// The revisit tier table is a promise to site owners (DESIGN.md: how often
// a site is visited and how many pages a visit reads, 50 at most): this
// test fails when it changes, so that it changes only on purpose, with
// DESIGN.md and the README in the same commit.
func TestPinnedDefaultTiers(t *testing.T) {
	want := Tiers{
		{Number: 1, MaxRank: 100_000, RevisitDays: 10, Pages: 50},
		{Number: 2, MaxRank: 500_000, RevisitDays: 21, Pages: 50},
		{Number: 3, MaxRank: 2_000_000, RevisitDays: 45, Pages: 20},
		{Number: 4, MaxRank: 5_000_000, RevisitDays: 90, Pages: 20},
		{Number: 5, MaxRank: 20_000_000, RevisitDays: 120, Pages: 20},
		{Number: 6, MaxRank: 0, RevisitDays: 365, Pages: 8},
	}
	if !reflect.DeepEqual(DefaultTiers, want) {
		t.Errorf("DefaultTiers = %+v\nwant %+v", DefaultTiers, want)
	}
	most := 0
	for _, tr := range DefaultTiers {
		most = max(most, tr.Pages)
	}
	if most != 50 {
		t.Errorf("at most %d pages per visit, want 50", most)
	}
}
