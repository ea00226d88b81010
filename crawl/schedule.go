package crawl

import (
	"cmp"
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
)

// CurrentSchedule is where the crawl reads what is due, under the data directory.
func CurrentSchedule(dataDir string) string {
	return filepath.Join(dataDir, "rebuilds", "current", data.ScheduleFile)
}

// ReadDue returns the schedule rows due at now (next_visit not after it),
// highest priority first. A missing file (no rebuild yet) is no rows. Only
// due rows are kept, so memory follows the day's work, not the whole web.
func ReadDue(path string, now time.Time) ([]data.ScheduleRow, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("schedule %s: %w", path, err)
	}
	r := parquet.NewGenericReader[data.ScheduleRow](pf)
	defer r.Close()
	var due []data.ScheduleRow
	buf := make([]data.ScheduleRow, 1024)
	for {
		n, err := r.Read(buf)
		for _, row := range buf[:n] {
			if !row.NextVisit.After(now) {
				due = append(due, row)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("schedule %s: %w", path, err)
		}
	}
	slices.SortFunc(due, func(a, b data.ScheduleRow) int {
		if c := cmp.Compare(b.Priority, a.Priority); c != 0 {
			return c
		}
		if c := a.NextVisit.Compare(b.NextVisit); c != 0 {
			return c
		}
		return cmp.Compare(a.Domain, b.Domain)
	})
	return due, nil
}
