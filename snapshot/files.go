package snapshot

import (
	"errors"
	"io/fs"

	"github.com/mapthenet/mapthenet/data"
)

// Files reads the files of one published snapshot, each streamed in
// batches and checked against package data's schema on open (an error
// names the file). It reads what is there, whatever the manifest says:
// Open gives a Snapshot whose manifest is checked too.
type Files struct {
	ID string
	st Storage
}

// At is snapshot id of st, for reading its files.
func At(st Storage, id string) Files { return Files{ID: id, st: st} }

// Location is where file of this snapshot is (a path, for messages and
// for DuckDB).
func (f Files) Location(file string) string { return f.st.Location(f.ID, file) }

// Open opens one file of the snapshot for reading at offsets, safe for
// concurrent ReadAt calls: for a reader that decodes the file's columns
// itself (the site's, which reads row groups in parallel). Such a reader
// checks the file's schema itself.
func (f Files) Open(file string) (File, error) { return f.st.Open(f.ID, file) }

// each streams the rows of one file of the snapshot to fn.
func each[T any](f Files, file string, fn func([]T) error) error {
	r, err := f.st.Open(f.ID, file)
	if err != nil {
		return err
	}
	defer r.Close()
	return readParquet(r, f.Location(file), fn)
}

// all reads every row of one file.
func all[T any](f Files, file string) ([]T, error) {
	var out []T
	err := each(f, file, func(rows []T) error {
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// EachDomain streams domains.parquet in id order. The slice is reused.
func (f Files) EachDomain(fn func([]data.DomainRow) error) error {
	return each(f, data.DomainsFile, fn)
}

// EachEdge streams edges.parquet in (src_id, dst_id) order.
func (f Files) EachEdge(fn func([]data.EdgeRow) error) error { return each(f, data.EdgesFile, fn) }

// EachLinkWord streams link_words.parquet.
func (f Files) EachLinkWord(fn func([]data.LinkWordRow) error) error {
	return each(f, data.LinkWordsFile, fn)
}

// EachVisit streams visits.parquet (by domain id, then start time).
func (f Files) EachVisit(fn func([]data.VisitRow) error) error { return each(f, data.VisitsFile, fn) }

// EachSchedule streams schedule.parquet, which is stored in the order the
// crawl takes it (next_visit, then priority desc, then domain). Memory
// holds one batch, whatever the schedule's length.
//
// A fleet node's copy of a snapshot has no schedule.parquet, only the
// partitions (data.SchedulePartitionFile) of the shards it holds: then
// EachSchedule streams those of them that are there, one after the other
// (each in the crawl's order, not the whole). Without either it is an
// error wrapping fs.ErrNotExist.
func (f Files) EachSchedule(fn func([]data.ScheduleRow) error) error {
	err := each(f, data.ScheduleFile, fn)
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	m, merr := ReadManifest(f.st, f.ID)
	if merr != nil || m.SchedulePartitions == nil {
		return err
	}
	for _, p := range m.SchedulePartitions.Files {
		perr := each(f, p.File, fn)
		if perr != nil && !errors.Is(perr, fs.ErrNotExist) {
			return perr
		}
	}
	return nil
}

// EachSchedulePartition streams shard's schedule partition
// (data.SchedulePartitionFile), in the crawl's order.
func (f Files) EachSchedulePartition(shard int, fn func([]data.ScheduleRow) error) error {
	return each(f, data.SchedulePartitionFile(shard), fn)
}

// Domains reads all of domains.parquet.
func (f Files) Domains() ([]data.DomainRow, error) { return all[data.DomainRow](f, data.DomainsFile) }

// Edges reads all of edges.parquet.
func (f Files) Edges() ([]data.EdgeRow, error) { return all[data.EdgeRow](f, data.EdgesFile) }

// LinkWords reads all of link_words.parquet.
func (f Files) LinkWords() ([]data.LinkWordRow, error) {
	return all[data.LinkWordRow](f, data.LinkWordsFile)
}

// Visits reads all of visits.parquet.
func (f Files) Visits() ([]data.VisitRow, error) { return all[data.VisitRow](f, data.VisitsFile) }

// Schedule reads all of schedule.parquet (a fleet node's copy: the
// partitions it has, as EachSchedule reads them).
func (f Files) Schedule() ([]data.ScheduleRow, error) {
	var out []data.ScheduleRow
	err := f.EachSchedule(func(rows []data.ScheduleRow) error {
		out = append(out, rows...)
		return nil
	})
	return out, err
}
