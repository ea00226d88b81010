package crawl

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// idleReason says why a crawl with --until-idle found nothing to visit, so
// that an empty run is never silent: no seeds and no schedule, or nothing
// due until the schedule's next time.
func idleReason(dataDir string, asOf time.Time, seeds int) string {
	seedsWhy := "no seeds (--seeds FILE)"
	if seeds > 0 {
		seedsWhy = fmt.Sprintf("the %d seeds are visited already", seeds)
	}
	cur, ok := currentSnapshot(dataDir)
	var next time.Time
	var rows int
	var err error
	if ok {
		next, rows, err = nextScheduled(cur, asOf)
	}
	switch {
	case !ok || errors.Is(err, fs.ErrNotExist):
		return seedsWhy + ", and no schedule yet (no rebuilds/current: run mapthenet rebuild after a first crawl)"
	case err != nil:
		return seedsWhy + ", and the schedule is unreadable: " + err.Error()
	case next.IsZero():
		return fmt.Sprintf("%s, and the schedule %s lists nothing due after %s (%d rows)", seedsWhy, cur.Location(data.ScheduleFile), asOf.Format(time.RFC3339), rows)
	default:
		return fmt.Sprintf("%s, and nothing in the schedule is due until %s", seedsWhy, next.UTC().Format(time.RFC3339))
	}
}

// nextScheduled returns the earliest next_visit after asOf in s's
// schedule, and how many rows it has.
func nextScheduled(s snapshot.Files, asOf time.Time) (time.Time, int, error) {
	var next time.Time
	rows := 0
	err := s.EachSchedule(func(batch []data.ScheduleRow) error {
		rows += len(batch)
		for _, row := range batch {
			if row.NextVisit.After(asOf) && (next.IsZero() || row.NextVisit.Before(next)) {
				next = row.NextVisit
			}
		}
		return nil
	})
	if err != nil {
		return time.Time{}, rows, err
	}
	return next, rows, nil
}
