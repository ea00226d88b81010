package schedule

import (
	"slices"
	"strings"
	"testing"
)

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
	bad := map[string]Tiers{
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

func TestParseTiers(t *testing.T) {
	got, err := ParseTiers([]string{"100000:10:50", "500000:21:50", "2000000:45:20", "5000000:90:20", "20000000:120:20", "*:365:8"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != DefaultTiers[i] {
			t.Errorf("tier %d: %+v, want %+v", i+1, got[i], DefaultTiers[i])
		}
	}
	if tt, err := ParseTiers([]string{"0:7:9"}); err != nil || len(tt) != 1 || tt[0].MaxRank != 0 {
		t.Errorf("a single catch-all: %+v, %v", tt, err)
	}
	for _, bad := range [][]string{{""}, {"*:1"}, {"x:1:1"}, {"-5:1:1", "*:1:1"}, {"*:0:8"}, {"*:1:1", "*:1:1"}, {"10:1:1.5", "*:1:1"}} {
		if _, err := ParseTiers(bad); err == nil {
			t.Errorf("ParseTiers(%q) accepted", bad)
		}
	}
}

func FuzzParseTiers(f *testing.F) {
	f.Add("100000:10:50,500000:21:50,*:365:8")
	f.Add("*:1:1")
	f.Add("1:2:3,:::,*")
	f.Fuzz(func(t *testing.T, s string) {
		tt, err := ParseTiers(strings.Split(s, ","))
		if err == nil {
			if verr := tt.Validate(); verr != nil {
				t.Fatalf("ParseTiers(%q) returned an invalid table: %v", s, verr)
			}
			_ = tt.For(1) // usable
			if again, err := ParseTiers(strings.Split(tt.String(), ",")); err != nil || !slices.Equal(again, tt) {
				t.Fatalf("ParseTiers(%q) = %v, %v; it wrote %v", tt.String(), again, err, tt)
			}
		}
	})
}

func TestTiersString(t *testing.T) {
	if got, want := DefaultTiers.String(), "100000:10:50,500000:21:50,2000000:45:20,5000000:90:20,20000000:120:20,*:365:8"; got != want {
		t.Errorf("DefaultTiers.String() = %q, want %q", got, want)
	}
}
