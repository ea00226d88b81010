package site

// Every read of a snapshot's files goes through this file, so that the
// server's use of package snapshot is in one place. The rest of the package
// sees only source.

import (
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// source is one opened snapshot: its manifest, and streams of its files'
// rows. Streams pass batches (the slice is reused between calls).
type source struct {
	snap *snapshot.Snapshot
}

// currentID is the snapshot id rebuilds/current names in dataDir ("" when
// there is none yet): what the server polls to notice a new snapshot.
func currentID(dataDir string) (string, error) { return snapshot.Local(dataDir).Current() }

// openSource opens snapshot id of dataDir (the current one when id is "").
func openSource(dataDir, id string) (*source, error) {
	s, err := snapshot.Open(dataDir, id)
	if err != nil {
		return nil, err
	}
	return &source{snap: s}, nil
}

func (s *source) id() string               { return s.snap.ID }
func (s *source) manifest() *data.Manifest { return s.snap.Manifest }

func (s *source) eachDomain(fn func([]data.DomainRow) error) error { return s.snap.EachDomain(fn) }

func (s *source) eachLinkWord(fn func([]data.LinkWordRow) error) error {
	return s.snap.EachLinkWord(fn)
}

// edgeCols are the columns of edges.parquet the server keeps: reading four
// columns of ten million rows rather than eight (two of them strings) is
// most of the load time saved.
type edgeCols struct {
	SrcID    int32 `parquet:"src_id"`
	DstID    int32 `parquet:"dst_id"`
	Nofollow bool  `parquet:"nofollow"`
	Sitewide bool  `parquet:"sitewide"`
}

func (s *source) eachEdge(fn func([]edgeCols) error) error {
	return snapshot.EachColumns(s.snap.Files, data.EdgesFile, fn)
}

// visitDomain is the one column of visits.parquet read at load: which
// domain each row belongs to, so that a domain's rows can be found again.
type visitDomain struct {
	Domain string `parquet:"domain"`
}

func (s *source) eachVisitDomain(fn func([]visitDomain) error) error {
	return snapshot.EachColumns(s.snap.Files, data.VisitsFile, fn)
}

// scheduleCols are the schedule's columns a domain page shows.
type scheduleCols struct {
	Domain    string    `parquet:"domain"`
	NextVisit time.Time `parquet:"next_visit,timestamp(microsecond)"`
	Pages     int32     `parquet:"pages"`
	Reason    string    `parquet:"reason"`
	Priority  int64     `parquet:"priority"`
}

func (s *source) eachSchedule(fn func([]scheduleCols) error) error {
	return snapshot.EachColumns(s.snap.Files, data.ScheduleFile, fn)
}

// openVisits opens visits.parquet for reading rows by number (a domain
// page reads its domain's rows only); see snapshot.Rows.
func (s *source) openVisits() (*visitFile, error) {
	r, err := snapshot.OpenRows[data.VisitRow](s.snap.Files, data.VisitsFile)
	if err != nil {
		return nil, err
	}
	return &visitFile{r: r}, nil
}

// visitFile is visits.parquet, open.
type visitFile struct {
	r *snapshot.Rows[data.VisitRow]
}

// rows reads rows [from, to) of the file.
func (v *visitFile) rows(from, to int64) ([]data.VisitRow, error) { return v.r.Read(from, to) }

func (v *visitFile) close() error { return v.r.Close() }
