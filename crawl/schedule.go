package crawl

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
)

// CurrentSchedule is where the crawl reads what is due, under the data directory.
func CurrentSchedule(dataDir string) string {
	return filepath.Join(dataDir, "rebuilds", "current", data.ScheduleFile)
}

// ReadDue returns the schedule rows due at now (next_visit not after it),
// highest priority first. A missing file (no rebuild yet) is no rows.
func ReadDue(path string, now time.Time) ([]data.ScheduleRow, error) {
	due, _, err := ReadDueTop(path, now, 0, nil)
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
func ReadDueTop(path string, now time.Time, limit int, skip func(domain string) bool) (due []data.ScheduleRow, total int, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("schedule: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("schedule: %w", err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, 0, fmt.Errorf("schedule %s: %w", path, err)
	}
	r := parquet.NewGenericReader[data.ScheduleRow](pf)
	defer r.Close()
	buf := make([]data.ScheduleRow, 1024)
	for {
		n, err := r.Read(buf)
		for _, row := range buf[:n] {
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
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("schedule %s: %w", path, err)
		}
	}
	slices.SortFunc(due, schedule.CompareDue)
	if limit > 0 && len(due) > limit {
		due = due[:limit]
	}
	return due, total, nil
}
