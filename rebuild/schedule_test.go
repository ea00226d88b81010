package rebuild

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// TestSortSchedule: sortSchedule orders as compareSchedule does, through
// ties of time (to the nanosecond) and of priority.
func TestSortSchedule(t *testing.T) {
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
		slices.SortFunc(want, compareSchedule)
		sortSchedule(rows)
		if !slices.Equal(rows, want) {
			t.Fatalf("%d rows: sortSchedule differs from compareSchedule", n)
		}
	}
}
