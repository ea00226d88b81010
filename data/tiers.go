package data

import (
	"fmt"
	"sort"
)

// Tier is one row of the revisit tier table: domains ranked at or above
// MaxRank (and below the previous tier's) are revisited every RevisitDays
// and read up to Pages pages per visit. MaxRank 0 means "every rank below,
// and unranked domains": only the last tier has it.
type Tier struct {
	Number      int   `json:"tier" yaml:"tier" toml:"tier"`
	MaxRank     int64 `json:"max_rank" yaml:"max_rank" toml:"max_rank"`
	RevisitDays int   `json:"revisit_days" yaml:"revisit_days" toml:"revisit_days"`
	Pages       int   `json:"pages" yaml:"pages" toml:"pages"`
}

// TierTable is ordered by MaxRank; the last tier catches everything else.
type TierTable []Tier

// DefaultTiers is DESIGN.md's table: 1-100k every 10 days (50 pages),
// -500k 21 days (50), -2M 45 days (20), -5M 90 days (20), -20M 120 days (20),
// below and unranked 365 days (8).
var DefaultTiers = TierTable{
	{Number: 1, MaxRank: 100_000, RevisitDays: 10, Pages: 50},
	{Number: 2, MaxRank: 500_000, RevisitDays: 21, Pages: 50},
	{Number: 3, MaxRank: 2_000_000, RevisitDays: 45, Pages: 20},
	{Number: 4, MaxRank: 5_000_000, RevisitDays: 90, Pages: 20},
	{Number: 5, MaxRank: 20_000_000, RevisitDays: 120, Pages: 20},
	{Number: 6, MaxRank: 0, RevisitDays: 365, Pages: 8},
}

// Validate checks that the table is usable: numbered 1..n, increasing
// MaxRank, positive days and pages, and a last catch-all tier.
func (t TierTable) Validate() error {
	if len(t) == 0 {
		return fmt.Errorf("tier table is empty")
	}
	for i, tr := range t {
		if tr.Number != i+1 {
			return fmt.Errorf("tier table: row %d has number %d, want %d", i+1, tr.Number, i+1)
		}
		if tr.RevisitDays <= 0 || tr.Pages <= 0 {
			return fmt.Errorf("tier %d: revisit_days and pages must be positive", tr.Number)
		}
		last := i == len(t)-1
		if last != (tr.MaxRank == 0) {
			return fmt.Errorf("tier %d: only the last tier (and it alone) has max_rank 0", tr.Number)
		}
		if i > 0 && !last && tr.MaxRank <= t[i-1].MaxRank {
			return fmt.Errorf("tier %d: max_rank %d is not above tier %d's %d", tr.Number, tr.MaxRank, t[i-1].Number, t[i-1].MaxRank)
		}
	}
	return nil
}

// For returns the tier of a domain with the given rank; rank 0 means
// unranked and gets the last tier.
func (t TierTable) For(rank int64) Tier {
	if rank <= 0 {
		return t[len(t)-1]
	}
	i := sort.Search(len(t)-1, func(i int) bool { return rank <= t[i].MaxRank })
	return t[i]
}

// Lowest is the last tier: never-visited and unranked domains get its pages.
func (t TierTable) Lowest() Tier { return t[len(t)-1] }
