package snapshot

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/snappy"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// PartBuild is one shard's part being written into a local directory
// (data's Part* files; package rebuild's ExportPart fills it). The files
// go through the same Writer as a snapshot's; Commit writes part.json
// last, so a part without it is incomplete and no merge reads it.
type PartBuild struct {
	dir  string
	done bool
}

// CreatePart makes dir (which must not exist, or be empty) for a part.
func CreatePart(dir string) (*PartBuild, error) {
	if err := os.MkdirAll(filepath.Dir(dir), dirMode()); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, dirMode()); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(entries) > 0 {
		return nil, fmt.Errorf("part %s: %w: the directory is not empty", dir, ErrExists)
	}
	return &PartBuild{dir: dir}, nil
}

// Dir is where the part is written.
func (p *PartBuild) Dir() string { return p.dir }

func (p *PartBuild) path(file string) string { return filepath.Join(p.dir, file) }

// partCompression is the codec of part files: Snappy, not the snapshot's
// zstd. A part is read once, by the merge, usually on the machine that
// wrote it; zstd's encoding was a fifth of a graphgen M rebuild's CPU
// time spent on files that live for a minute.
var partCompression = parquet.Compression(&snappy.Codec{})

// CreateDomains starts the part's domains file.
func (p *PartBuild) CreateDomains() (*Writer[data.PartDomainRow], error) {
	return create[data.PartDomainRow](p.path(data.PartDomainsFile), smallRowGroup, partCompression)
}

// CreateEdges starts the part's edges file.
func (p *PartBuild) CreateEdges() (*Writer[data.PartEdgeRow], error) {
	return create[data.PartEdgeRow](p.path(data.PartEdgesFile), smallRowGroup, partCompression)
}

// CreateLinkWords starts the part's link-word counts.
func (p *PartBuild) CreateLinkWords() (*Writer[data.PartLinkWordRow], error) {
	return create[data.PartLinkWordRow](p.path(data.PartLinkWordsFile), smallRowGroup, partCompression)
}

// CreateVisits starts the part's visits file.
func (p *PartBuild) CreateVisits() (*Writer[data.PartVisitRow], error) {
	return create[data.PartVisitRow](p.path(data.PartVisitsFile), smallRowGroup, partCompression)
}

// Commit writes part.json (synced) and syncs the directory: the part is
// then complete and durable.
func (p *PartBuild) Commit(m *data.PartManifest) error {
	if p.done {
		return fmt.Errorf("part %s: committed or aborted already", p.dir)
	}
	if m.Format != data.PartFormat {
		return fmt.Errorf("part %s: manifest of format %d, want %d", p.dir, m.Format, data.PartFormat)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(p.path(data.PartManifestFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = atomicfile.SyncDir(p.dir)
	}
	if err != nil {
		return fmt.Errorf("part %s: %w", p.dir, err)
	}
	p.done = true
	return nil
}

// Abort removes what the part wrote, unless it was committed. Writers
// still open must be aborted first.
func (p *PartBuild) Abort() {
	if p.done {
		return
	}
	p.done = true
	os.RemoveAll(p.dir)
}

// Part is a complete part in a local directory, opened for reading.
type Part struct {
	Dir      string
	Manifest data.PartManifest
}

// ErrPartIncomplete: a part directory without its part.json (an export
// cut off, or still being written).
var ErrPartIncomplete = errors.New("incomplete part: no part.json")

// OpenPart reads dir's part.json and checks the part's format.
func OpenPart(dir string) (*Part, error) {
	b, err := os.ReadFile(filepath.Join(dir, data.PartManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("part %s: %w", dir, ErrPartIncomplete)
	}
	if err != nil {
		return nil, err
	}
	p := &Part{Dir: dir}
	if err := json.Unmarshal(b, &p.Manifest); err != nil {
		return nil, fmt.Errorf("part %s: %s: %v", dir, data.PartManifestFile, err)
	}
	if p.Manifest.Format != data.PartFormat {
		return nil, fmt.Errorf("part %s: format %d, this program reads %d", dir, p.Manifest.Format, data.PartFormat)
	}
	return p, nil
}

// Cursor reads the rows of one file of a part in order, a batch at a
// time: a k-way merge holds one per part and file, so its memory is a
// batch per part. A damaged file is an error naming it (ErrNotParquet),
// never a panic.
type Cursor[T any] struct {
	name string
	f    *os.File
	r    *parquet.GenericReader[T]
	buf  []T
	i, n int
	err  error
	eof  bool
}

// cursorBatch is how many rows a Cursor reads at once.
const cursorBatch = 4096

// OpenCursor opens file (data.PartDomainsFile, ...) of part p.
func OpenCursor[T any](p *Part, file string) (c *Cursor[T], err error) {
	name := filepath.Join(p.Dir, file)
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", name, ErrNotParquet, r)
		}
	}()
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err == nil {
		want := parquet.SchemaOf(new(T))
		if err = checkColumns(want, pf.Schema()); err == nil {
			_, err = parquet.Convert(want, pf.Schema())
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
	}
	return &Cursor[T]{name: name, f: f, r: parquet.NewGenericReader[T](pf, parquet.SchemaOf(new(T))), buf: make([]T, cursorBatch)}, nil
}

// Next returns the next row (valid until the batch after it is read), or
// nil at the end or after an error (Err).
func (c *Cursor[T]) Next() *T {
	if c.i < c.n {
		c.i++
		return &c.buf[c.i-1]
	}
	if c.eof || c.err != nil {
		return nil
	}
	c.fill()
	if c.i < c.n {
		c.i++
		return &c.buf[c.i-1]
	}
	return nil
}

func (c *Cursor[T]) fill() {
	defer func() {
		if r := recover(); r != nil {
			c.err = fmt.Errorf("%s: %w: %v", c.name, ErrNotParquet, r)
			c.n = 0
		}
	}()
	clear(c.buf)
	n, err := c.r.Read(c.buf)
	c.i, c.n = 0, n
	switch {
	case err == io.EOF:
		c.eof = true
	case err != nil:
		c.err = fmt.Errorf("%s: %w: %v", c.name, ErrNotParquet, err)
	}
}

// Err is the error that ended the rows, if any.
func (c *Cursor[T]) Err() error { return c.err }

// Close closes the file.
func (c *Cursor[T]) Close() error {
	c.r.Close()
	return c.f.Close()
}
