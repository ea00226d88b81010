package schedule

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// TestSort: Sort orders as CompareSchedule does, through
// ties of time (to the nanosecond) and of priority.
func TestSort(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, n := range []int{0, 1, 2, 10, 1000} {
		rows := make([]data.ScheduleRow, n)
		for i := range rows {
			rows[i] = data.ScheduleRow{
				Domain:    fmt.Sprintf("d%d.example", r.IntN(1_000_000)*1000+i), // unique
				NextVisit: base.Add(time.Duration(r.IntN(3))*time.Hour + time.Duration(r.IntN(2))*time.Nanosecond - time.Duration(r.IntN(2))*time.Second),
				Priority:  int64(r.IntN(3)),
			}
		}
		want := slices.Clone(rows)
		slices.SortFunc(want, CompareSchedule)
		Sort(rows)
		if !slices.Equal(rows, want) {
			t.Fatalf("%d rows: Sort differs from CompareSchedule", n)
		}
	}
}

// TestCompareDue: the crawl takes the most linked-to due row first, then
// the longest overdue, then by name; CompareFound orders found domains
// the same way.
func TestCompareDue(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	rows := []data.ScheduleRow{
		{Domain: "d.example", NextVisit: t0, Priority: 1},
		{Domain: "c.example", NextVisit: t0.Add(-time.Hour), Priority: 1},
		{Domain: "b.example", NextVisit: t0, Priority: 1},
		{Domain: "a.example", NextVisit: t0, Priority: 0},
		{Domain: "e.example", NextVisit: t0.Add(time.Hour), Priority: 9},
	}
	slices.SortFunc(rows, CompareDue)
	var got []string
	for _, r := range rows {
		got = append(got, r.Domain)
	}
	if want := []string{"e.example", "c.example", "b.example", "d.example", "a.example"}; !slices.Equal(got, want) {
		t.Errorf("due order %v, want %v", got, want)
	}
	for _, r := range rows {
		for _, s := range rows {
			if r.NextVisit.Equal(s.NextVisit) {
				if a, b := CompareDue(r, s), CompareFound(int(r.Priority), r.Domain, int(s.Priority), s.Domain); a != b {
					t.Errorf("%s, %s: CompareDue %d, CompareFound %d", r.Domain, s.Domain, a, b)
				}
			}
		}
	}
}
