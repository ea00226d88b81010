package site

// Every read of a snapshot's files goes through this file, so that the
// package that owns snapshots (today rebuild; later a snapshot package) can
// be swapped in one place. The rest of the package sees only source.

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/rebuild"
)

// source is one opened snapshot: its manifest, and streams of its files'
// rows. Streams pass batches (the slice is reused between calls).
type source struct {
	snap *rebuild.Snapshot
}

// currentID is the snapshot id rebuilds/current names in dataDir ("" when
// there is none yet): what the server polls to notice a new snapshot.
func currentID(dataDir string) (string, error) {
	target, err := os.Readlink(filepath.Join(dataDir, rebuild.RebuildsDir, rebuild.CurrentLink))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Base(target), nil
}

// openSource opens snapshot id of dataDir (the current one when id is "").
func openSource(dataDir, id string) (*source, error) {
	s, err := rebuild.OpenSnapshot(dataDir, id)
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
	return streamColumns(s.snap.Path(data.EdgesFile), fn)
}

// visitDomain is the one column of visits.parquet read at load: which
// domain each row belongs to, so that a domain's rows can be found again.
type visitDomain struct {
	Domain string `parquet:"domain"`
}

func (s *source) eachVisitDomain(fn func([]visitDomain) error) error {
	return streamColumns(s.snap.Path(data.VisitsFile), fn)
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
	return streamColumns(s.snap.Path(data.ScheduleFile), fn)
}

// openVisits opens visits.parquet for reading rows by number (a domain
// page reads its domain's rows only). The open file keeps the rows
// readable after a rebuild prunes the snapshot or a removal rewrites the
// file: both replace the directory entry, not the open file.
func (s *source) openVisits() (*visitFile, error) {
	path := s.snap.Path(data.VisitsFile)
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	pf, err := openParquet(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := checkSchema[data.VisitRow](pf, path); err != nil {
		f.Close()
		return nil, err
	}
	return &visitFile{f: f, pf: pf, path: path}, nil
}

// visitFile is visits.parquet, open.
type visitFile struct {
	f    *os.File
	pf   *parquet.File
	path string
}

// rows reads rows [from, to) of the file.
func (v *visitFile) rows(from, to int64) (out []data.VisitRow, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", v.path, rebuild.ErrNotParquet, r)
		}
	}()
	r := parquet.NewGenericReader[data.VisitRow](v.pf, parquet.SchemaOf(new(data.VisitRow)))
	defer r.Close()
	if err := r.SeekToRow(from); err != nil {
		return nil, fmt.Errorf("%s: %w", v.path, err)
	}
	out = make([]data.VisitRow, to-from)
	n, err := r.Read(out)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w", v.path, err)
	}
	return out[:n], nil
}

func (v *visitFile) close() error { return v.f.Close() }

// streamColumns reads the columns of T (a subset of the file's) from the
// Parquet file at path, in batches. A column T names that the file lacks,
// or has with another physical type, is an error, as is a damaged file
// (parquet-go panics on some; those become errors here).
func streamColumns[T any](path string, fn func([]T) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", path, rebuild.ErrNotParquet, r)
		}
	}()
	pf, err := openParquet(f, st.Size(), path)
	if err != nil {
		return err
	}
	if err := checkSchema[T](pf, path); err != nil {
		return err
	}
	r := parquet.NewGenericReader[T](pf, parquet.SchemaOf(new(T)))
	defer r.Close()
	buf := make([]T, 4096)
	for {
		clear(buf)
		n, rerr := r.Read(buf)
		if n > 0 {
			if err := fn(buf[:n]); err != nil {
				return err
			}
		}
		if errors.Is(rerr, io.EOF) {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("%s: %w: %v", path, rebuild.ErrNotParquet, rerr)
		}
	}
}

func openParquet(f *os.File, size int64, path string) (pf *parquet.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", path, rebuild.ErrNotParquet, r)
		}
	}()
	pf, err = parquet.OpenFile(f, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, rebuild.ErrNotParquet, err)
	}
	return pf, nil
}

// checkSchema makes sure the file has every column T reads, of the same
// physical type: parquet-go would read a missing column as zeros.
func checkSchema[T any](pf *parquet.File, path string) error {
	want, have := parquet.SchemaOf(new(T)), pf.Schema()
	for _, col := range want.Columns() {
		w, _ := want.Lookup(col...)
		h, ok := have.Lookup(col...)
		if !ok {
			return fmt.Errorf("%s: %w: no column %q", path, rebuild.ErrNotParquet, col)
		}
		if w.Node.Type().Kind() != h.Node.Type().Kind() {
			return fmt.Errorf("%s: %w: column %q is %v, want %v", path, rebuild.ErrNotParquet, col, h.Node.Type().Kind(), w.Node.Type().Kind())
		}
	}
	return nil
}
