package crawl

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// An idle crawl says why it has nothing to do (issue 13: no silent empty
// runs): no seeds and no schedule, or nothing due until the schedule's
// next time, or a schedule with nothing after now, or one it cannot read.
func TestIdleReason(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	later := now.Add(90 * time.Minute)
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
		seeds int
		want  []string
	}{
		{"no seeds, no snapshot", func(*testing.T, string) {}, 0,
			[]string{"no seeds (--seeds FILE)", "no schedule yet"}},
		{"seeds visited, nothing due yet", func(t *testing.T, dir string) {
			writeSnapshot(t, dir, "2026-12-02T020000Z", now, []data.ScheduleRow{
				{Domain: "a.test", NextVisit: later.Add(time.Hour)},
				{Domain: "b.test", NextVisit: later},
				{Domain: "c.test", NextVisit: now.Add(-time.Hour)}, // due before now: visited already
			})
		}, 3, []string{"the 3 seeds are visited already", "nothing in the schedule is due until " + later.Format(time.RFC3339)}},
		{"nothing after now", func(t *testing.T, dir string) {
			writeSnapshot(t, dir, "2026-12-02T020000Z", now, []data.ScheduleRow{{Domain: "a.test", NextVisit: now.Add(-time.Hour)}})
		}, 0, []string{"lists nothing due after " + now.Format(time.RFC3339) + " (1 rows)"}},
		{"unreadable schedule", func(t *testing.T, dir string) {
			writeSnapshot(t, dir, "2026-12-02T020000Z", now, nil)
			if err := os.WriteFile(filepath.Join(dir, "rebuilds", "2026-12-02T020000Z", data.ScheduleFile), []byte("not parquet"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 0, []string{"the schedule is unreadable"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			got := idleReason(dir, now, tc.seeds)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("got %q, want it to say %q", got, w)
				}
			}
		})
	}
}
