package crawl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
)

// idleReason says why a crawl with --until-idle found nothing to visit, so
// that an empty run is never silent: no seeds and no schedule, or nothing
// due until the schedule's next time.
func idleReason(dataDir string, asOf time.Time, seeds int) string {
	seedsWhy := "no seeds (--seeds FILE)"
	if seeds > 0 {
		seedsWhy = fmt.Sprintf("the %d seeds are visited already", seeds)
	}
	path := CurrentSchedule(dataDir)
	next, rows, err := nextScheduled(path, asOf)
	switch {
	case dataDir == "" || errors.Is(err, fs.ErrNotExist):
		return seedsWhy + ", and no schedule yet (no rebuilds/current: run mapthenet rebuild after a first crawl)"
	case err != nil:
		return seedsWhy + ", and the schedule is unreadable: " + err.Error()
	case next.IsZero():
		return fmt.Sprintf("%s, and the schedule %s lists nothing due after %s (%d rows)", seedsWhy, path, asOf.Format(time.RFC3339), rows)
	default:
		return fmt.Sprintf("%s, and nothing in the schedule is due until %s", seedsWhy, next.UTC().Format(time.RFC3339))
	}
}

// nextScheduled returns the earliest next_visit after asOf in the
// schedule file, and how many rows it has.
func nextScheduled(path string, asOf time.Time) (time.Time, int, error) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return time.Time{}, 0, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return time.Time{}, 0, err
	}
	r := parquet.NewGenericReader[data.ScheduleRow](pf)
	defer r.Close()
	var next time.Time
	rows := 0
	buf := make([]data.ScheduleRow, 1024)
	for {
		n, err := r.Read(buf)
		rows += n
		for _, row := range buf[:n] {
			if row.NextVisit.After(asOf) && (next.IsZero() || row.NextVisit.Before(next)) {
				next = row.NextVisit
			}
		}
		if err == io.EOF {
			return next, rows, nil
		}
		if err != nil {
			return time.Time{}, rows, err
		}
	}
}
