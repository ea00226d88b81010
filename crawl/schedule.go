package crawl

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
	"github.com/mapthenet/mapthenet/snapshot"
)

// currentSnapshot is the snapshot whose schedule the crawl follows: the
// one rebuilds/current names in dataDir, resolved once, so that what is
// read is that snapshot's even if a rebuild moves `current` meanwhile. ok
// is false when there is none yet.
func currentSnapshot(dataDir string) (s snapshot.Files, ok bool) {
	if dataDir == "" {
		return snapshot.Files{}, false
	}
	d := snapshot.Local(dataDir)
	id, err := d.Current()
	if err != nil || id == "" {
		return snapshot.Files{}, false
	}
	return snapshot.At(d, id), true
}

// ReadDue returns the rows of s's schedule due at now (next_visit not
// after it), highest priority first. A snapshot without a schedule is no
// rows.
func ReadDue(s snapshot.Files, now time.Time) ([]data.ScheduleRow, error) {
	due, _, err := ReadDueTop(s, now, 0, nil)
	return due, err
}

// DefaultMaxDue bounds the due rows a crawl holds at once (about 100 bytes
// each): a schedule listing millions of new domains after a rebuild is
// read again for the next ones when these are taken.
const DefaultMaxDue = 100_000

// ReadDueTop is ReadDue keeping only the first limit rows (0: all) of those
// skip (nil: none) does not pass over; total counts those due rows. Only
// the rows kept are in memory (at most twice limit while reading), so
// memory follows the limit, not the schedule's length.
func ReadDueTop(s snapshot.Files, now time.Time, limit int, skip func(domain string) bool) (due []data.ScheduleRow, total int, err error) {
	err = s.EachSchedule(func(batch []data.ScheduleRow) error {
		for _, row := range batch {
			if row.NextVisit.After(now) || (skip != nil && skip(row.Domain)) {
				continue
			}
			total++
			due = append(due, row)
			if limit > 0 && len(due) >= 2*limit {
				slices.SortFunc(due, schedule.CompareDue)
				due = slices.Clip(due[:limit])
			}
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("schedule: %w", err)
	}
	slices.SortFunc(due, schedule.CompareDue)
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	return due, total, nil
}
