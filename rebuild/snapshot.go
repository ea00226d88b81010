package rebuild

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mapthenet/mapthenet/data"
)

// ErrNoSnapshot: no rebuild has completed in this data directory yet.
var ErrNoSnapshot = errors.New("no snapshot yet: run mapthenet rebuild")

// Snapshot is a complete snapshot directory opened for reading.
type Snapshot struct {
	ID       string
	Dir      string
	Manifest *data.Manifest
}

// OpenSnapshot opens the snapshot id in dataDir, or the current one when id
// is "". The directory is resolved once: a rebuild that moves `current`
// meanwhile does not change what this Snapshot reads (until --keep prunes
// it, which takes many rebuilds).
func OpenSnapshot(dataDir, id string) (*Snapshot, error) {
	dir := filepath.Join(dataDir, RebuildsDir)
	if id == "" {
		cur, err := currentID(dir)
		if err != nil {
			return nil, err
		}
		if cur == "" {
			return nil, fmt.Errorf("%w (%s has no %s)", ErrNoSnapshot, dir, CurrentLink)
		}
		id = cur
	}
	s := &Snapshot{ID: id, Dir: filepath.Join(dir, id)}
	if _, err := os.Stat(s.Dir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("snapshot %s: %s does not exist", id, s.Dir)
		}
		return nil, err
	}
	m, err := ReadManifest(s.Path(data.ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("snapshot %s is incomplete or damaged: %w", id, err)
	}
	if m.SchemaVersion != data.SchemaVersion {
		return nil, fmt.Errorf("snapshot %s has schema version %d; this mapthenet reads version %d: run mapthenet rebuild",
			id, m.SchemaVersion, data.SchemaVersion)
	}
	s.Manifest = m
	return s, nil
}

// Path is the path of one of the snapshot's files.
func (s *Snapshot) Path(file string) string { return filepath.Join(s.Dir, file) }

// EachDomain streams domains.parquet in id order. The slice is reused.
func (s *Snapshot) EachDomain(fn func([]data.DomainRow) error) error {
	return readParquet(s.Path(data.DomainsFile), fn)
}

// EachVisit streams visits.parquet (by domain id, then start time).
func (s *Snapshot) EachVisit(fn func([]data.VisitRow) error) error {
	return readParquet(s.Path(data.VisitsFile), fn)
}

// EachLinkWord streams link_words.parquet.
func (s *Snapshot) EachLinkWord(fn func([]data.LinkWordRow) error) error {
	return readParquet(s.Path(data.LinkWordsFile), fn)
}

// EachEdge streams edges.parquet in (src_id, dst_id) order.
func (s *Snapshot) EachEdge(fn func([]data.EdgeRow) error) error {
	return readParquet(s.Path(data.EdgesFile), fn)
}

// Domains reads all of domains.parquet.
func (s *Snapshot) Domains() ([]data.DomainRow, error) {
	return readAllParquet[data.DomainRow](s.Path(data.DomainsFile))
}

// Schedule reads schedule.parquet, which is stored in the order the crawl
// takes it (next_visit, then priority desc, then domain).
func (s *Snapshot) Schedule() ([]data.ScheduleRow, error) {
	return readAllParquet[data.ScheduleRow](s.Path(data.ScheduleFile))
}

// ScheduleHead reads the first limit rows of the schedule (all if limit <= 0).
func (s *Snapshot) ScheduleHead(limit int) ([]data.ScheduleRow, error) {
	var out []data.ScheduleRow
	errEnough := errors.New("enough")
	err := readParquet(s.Path(data.ScheduleFile), func(rows []data.ScheduleRow) error {
		for _, r := range rows {
			if limit > 0 && len(out) >= limit {
				return errEnough
			}
			out = append(out, r)
		}
		return nil
	})
	if errors.Is(err, errEnough) {
		err = nil
	}
	return out, err
}

// Visits reads all of visits.parquet.
func (s *Snapshot) Visits() ([]data.VisitRow, error) {
	return readAllParquet[data.VisitRow](s.Path(data.VisitsFile))
}

// LinkWords reads all of link_words.parquet.
func (s *Snapshot) LinkWords() ([]data.LinkWordRow, error) {
	return readAllParquet[data.LinkWordRow](s.Path(data.LinkWordsFile))
}

// Edges reads all of edges.parquet.
func (s *Snapshot) Edges() ([]data.EdgeRow, error) {
	return readAllParquet[data.EdgeRow](s.Path(data.EdgesFile))
}
