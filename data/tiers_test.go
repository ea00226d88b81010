package data

import "testing"

func TestDefaultTiersValid(t *testing.T) {
	if err := DefaultTiers.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestTierFor(t *testing.T) {
	tests := []struct {
		rank  int64
		tier  int
		days  int
		pages int
	}{
		{0, 6, 365, 8}, // unranked
		{1, 1, 10, 50},
		{100_000, 1, 10, 50},
		{100_001, 2, 21, 50},
		{500_000, 2, 21, 50},
		{500_001, 3, 45, 20},
		{2_000_000, 3, 45, 20},
		{2_000_001, 4, 90, 20},
		{5_000_001, 5, 120, 20},
		{20_000_000, 5, 120, 20},
		{20_000_001, 6, 365, 8},
	}
	for _, tc := range tests {
		got := DefaultTiers.For(tc.rank)
		if got.Number != tc.tier || got.RevisitDays != tc.days || got.Pages != tc.pages {
			t.Errorf("For(%d) = %+v, want tier %d, %d days, %d pages", tc.rank, got, tc.tier, tc.days, tc.pages)
		}
	}
}

func TestTierTableValidate(t *testing.T) {
	bad := map[string]TierTable{
		"empty":           {},
		"misnumbered":     {{Number: 2, RevisitDays: 1, Pages: 1}},
		"no catch-all":    {{Number: 1, MaxRank: 10, RevisitDays: 1, Pages: 1}},
		"zero pages":      {{Number: 1, RevisitDays: 1}},
		"not increasing":  {{Number: 1, MaxRank: 10, RevisitDays: 1, Pages: 1}, {Number: 2, MaxRank: 5, RevisitDays: 1, Pages: 1}, {Number: 3, RevisitDays: 1, Pages: 1}},
		"early catch-all": {{Number: 1, RevisitDays: 1, Pages: 1}, {Number: 2, RevisitDays: 1, Pages: 1}},
	}
	for name, tt := range bad {
		if err := tt.Validate(); err == nil {
			t.Errorf("%s: Validate() = nil, want an error", name)
		}
	}
}
