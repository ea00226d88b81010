package schedule

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/mapthenet/mapthenet/data"
)

// Tiers is the revisit tier table, best tier first: a domain ranked at or
// above a tier's MaxRank (and below the previous tier's) is revisited every
// RevisitDays and reads up to Pages pages a visit. The last tier, and it
// alone, has MaxRank 0: every rank below and the unranked. Its rows are
// data.Tier, as manifest.json lists them.
type Tiers []data.Tier

// DefaultTiers is DESIGN.md's table: 1-100k every 10 days (50 pages),
// -500k 21 days (50), -2M 45 days (20), -5M 90 days (20), -20M 120 days (20),
// below and unranked 365 days (8).
var DefaultTiers = Tiers{
	{Number: 1, MaxRank: 100_000, RevisitDays: 10, Pages: 50},
	{Number: 2, MaxRank: 500_000, RevisitDays: 21, Pages: 50},
	{Number: 3, MaxRank: 2_000_000, RevisitDays: 45, Pages: 20},
	{Number: 4, MaxRank: 5_000_000, RevisitDays: 90, Pages: 20},
	{Number: 5, MaxRank: 20_000_000, RevisitDays: 120, Pages: 20},
	{Number: 6, MaxRank: 0, RevisitDays: 365, Pages: 8},
}

// Validate checks that the table is usable: numbered 1..n, increasing
// MaxRank, positive days and pages, and a last catch-all tier.
func (t Tiers) Validate() error {
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
func (t Tiers) For(rank int64) data.Tier {
	if rank <= 0 {
		return t[len(t)-1]
	}
	i := sort.Search(len(t)-1, func(i int) bool { return rank <= t[i].MaxRank })
	return t[i]
}

// Lowest is the last tier: a first visit (a seed, a domain found during a
// crawl, a never-visited domain in the schedule) reads its pages.
func (t Tiers) Lowest() data.Tier { return t[len(t)-1] }

// ParseTiers reads the tier table as the tiers flag and config key give
// it: MAXRANK:DAYS:PAGES entries, best tier first, numbered from 1; the
// last one's MAXRANK is * or 0 (every lower rank and the unranked). The
// table it returns is valid.
func ParseTiers(entries []string) (Tiers, error) {
	var t Tiers
	for i, e := range entries {
		parts := strings.Split(strings.TrimSpace(e), ":")
		if len(parts) != 3 {
			return nil, fmt.Errorf("%q: want MAXRANK:DAYS:PAGES", e)
		}
		var maxRank int64
		if parts[0] != "*" {
			v, err := strconv.ParseInt(parts[0], 10, 64)
			if err != nil || v < 0 {
				return nil, fmt.Errorf("%q: MAXRANK %q is not a rank or *", e, parts[0])
			}
			maxRank = v
		}
		days, err1 := strconv.Atoi(parts[1])
		pages, err2 := strconv.Atoi(parts[2])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%q: DAYS and PAGES must be whole numbers", e)
		}
		t = append(t, data.Tier{Number: i + 1, MaxRank: maxRank, RevisitDays: days, Pages: pages})
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// String writes the table as ParseTiers reads it.
func (t Tiers) String() string {
	parts := make([]string, len(t))
	for i, tr := range t {
		max := strconv.FormatInt(tr.MaxRank, 10)
		if tr.MaxRank == 0 {
			max = "*"
		}
		parts[i] = fmt.Sprintf("%s:%d:%d", max, tr.RevisitDays, tr.Pages)
	}
	return strings.Join(parts, ",")
}
