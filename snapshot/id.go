package snapshot

import (
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// ID is the id of the snapshot as of t: its UTC time to the second,
// YYYY-MM-DDTHHMMSSZ (data.SnapshotIDLayout), so that ids sort by time.
func ID(t time.Time) string { return t.UTC().Format(data.SnapshotIDLayout) }

// ParseID returns the as-of time an id names; ok false when name is not
// a snapshot id.
func ParseID(name string) (time.Time, bool) {
	t, err := time.Parse(data.SnapshotIDLayout, name)
	return t, err == nil
}

// ParquetFiles are the snapshot's Parquet files (each but the manifest),
// in the order a rebuild writes them.
var ParquetFiles = []string{data.EdgesFile, data.LinkWordsFile, data.VisitsFile, data.DomainsFile, data.ScheduleFile}
