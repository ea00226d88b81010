package edgefile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// Edges is an edge file read into memory: the names, in parts by reader
// (see Names), and the followed, non-self-loop edges, in no fixed order:
// Dst their targets' ids, Runs their sources' (Runs[0].N edges from
// Runs[0].ID, then Runs[1].N from Runs[1].ID, and so on: see Run).
type Edges struct {
	Names     *Names
	Runs      []Run
	Dst       []uint32
	Rows      int64 // rows read, nofollow and self-loops included
	NameBytes int64 // the memory of the name table: its slots, the names' references and bytes
}

// Memory the names path needs, for Fit's check and --help: the edge list
// and the graph of followed edges (24 bytes a row at the peak, when the
// graph is built beside the edge list, a bound: targets 4, sources 4 in
// the graph, and the edge list's runs of sources, 8 bytes a run, under a
// byte a row in a file grouped by source, 8 in a file in no order) and a
// name (its slot in the
// intern table, 32 bytes at 35 to 70% full, its reference and bytes,
// about 90 bytes a name with the table, then the renumbering's keys and
// sort buffer, 40 more).
const (
	RowBytes  = 24
	NameBytes = 140
)

// ErrNamesTooBig is the error of an edge file whose names (and edges) do
// not fit the memory limit; its message says what to do.
var ErrNamesTooBig = errors.New("the edge file's names do not fit in memory")

// ReadOptions are Read's options.
type ReadOptions struct {
	Workers int // readers (each decodes and interns); at least 1
	// Progress, when not nil, is called with the rows read so far and the
	// file's rows every ProgressEvery while reading.
	Progress      func(done, total int64)
	ProgressEvery time.Duration
	// MemoryLimit, when positive, is the memory the reading may count on:
	// a file whose rows alone need more (RowBytes each) is refused before
	// reading, and the reading stops as soon as its names and rows would
	// need more (NameBytes a name), both with ErrNamesTooBig.
	MemoryLimit int64
}

// Edge file columns.
const (
	colSrc      = "src"
	colDst      = "dst"
	colNofollow = "nofollow"
)

// Read reads the src, dst and (if present) nofollow columns of the
// Parquet file at path. The footer is read and checked with Arrow; the
// pages are read with parquet-go by readers (one a worker, each its own
// reader of the file), which take the column chunks in turn and intern
// their names in one shared table (see decode.go and intern.go). The
// names of a reader's ids depend on which reader reached them first,
// which is fine: ids are renumbered by name later and the CSR does not
// depend on the order of edges. Nofollow rows add their domains but no
// edge.
func Read(ctx context.Context, path string, o ReadOptions) (el *Edges, err error) {
	workers, progress := max(1, o.Workers), o.Progress
	// The Parquet and Arrow readers panic on some malformed files; a bad
	// input file must give an error, never bring the program down. (The
	// readers recover on their own goroutines, see reader.run.)
	defer func() {
		if r := recover(); r != nil {
			el, err = nil, fmt.Errorf("rank: %s: malformed Parquet file: %v", path, r)
		}
	}()
	pf, fr, err := openEdgeFile(path)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	schema, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("rank: %s: %w", path, err)
	}
	cols, err := pickColumns(path, pf, schema)
	if err != nil {
		return nil, err
	}

	rows := pf.NumRows()
	if rows < 0 {
		return nil, fmt.Errorf("rank: %s: malformed Parquet file: %d rows", path, rows)
	}
	// Size the arrays from the footer's row count, but trust it only as
	// far as the file's size allows (a row takes at least a byte or so
	// even compressed): a damaged footer must not make us allocate
	// gigabytes. A host graph has about a tenth as many domains as edges.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	if err := fits(path, o.MemoryLimit, rows, 0, rows); err != nil {
		return nil, err
	}
	hint := min(rows, fi.Size(), 1<<32-1)
	nrg := pf.NumRowGroups()
	if err := checkChunks(pf, cols.sorted(), fi.Size()); err != nil {
		return nil, fmt.Errorf("rank: %s: malformed Parquet file: %w", path, err)
	}
	firstRow := make([]int64, nrg+1)
	for rg := range nrg {
		firstRow[rg+1] = firstRow[rg] + pf.MetaData().RowGroup(rg).NumRows()
	}
	// A footer whose row count its row groups do not add up to is damaged:
	// without this, one that lost its row groups read as an empty graph.
	if firstRow[nrg] != rows {
		if nrg == 0 {
			return nil, fmt.Errorf("rank: %s: malformed Parquet file: the footer says %d rows in no row group", path, rows)
		}
		return nil, fmt.Errorf("rank: %s: malformed Parquet file: the footer says %d rows, its row groups %d", path, rows, firstRow[nrg])
	}
	readers := max(1, min(workers, 2*nrg, maxReaders))
	t := newTable(readers, int(min(max(hint/10, 1024), 1<<24)), rows)
	if rows == 0 {
		return &Edges{Names: t.names()}, nil
	}
	// The target array holds each row's target id at its row number. The
	// footer's row count is trusted up front only as far as the file's
	// size makes it plausible (a damaged footer must not make us allocate
	// gigabytes); past that the array grows as the row groups are reached.
	// The sources are kept as runs, by row group.
	alloc := int(min(rows, 16*fi.Size()+1<<16))
	t.dst = makeLarge[uint32](alloc, alloc)

	st := &readState{ctx: ctx, path: path, cols: cols, firstRow: firstRow, t: t, runs: make([][]Run, nrg)}
	if o.MemoryLimit > 0 {
		st.check = func() error { return fits(path, o.MemoryLimit, rows, t.count(), st.done.Load()) }
	}
	errs := make(chan error, readers)
	var wg sync.WaitGroup
	for w := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &reader{st: st, nm: t.readers[w]}
			if err := r.run(); err != nil {
				st.failed.Store(true)
				errs <- err
			}
		}()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	if progress != nil && o.ProgressEvery > 0 {
		tick := time.NewTicker(o.ProgressEvery)
	wait:
		for {
			select {
			case <-finished:
				break wait
			case <-tick.C:
				progress(st.done.Load(), rows)
			}
		}
		tick.Stop()
	}
	<-finished
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	select {
	case err := <-errs:
		if errors.Is(err, ErrNamesTooBig) {
			return nil, err
		}
		return nil, fmt.Errorf("rank: %s: %w", path, err)
	default:
	}
	if progress != nil {
		progress(rows, rows)
	}
	el = &Edges{Names: t.names(), Rows: rows, NameBytes: t.bytes()}
	el.Runs, el.Dst = followed(joinRuns(st.runs), t.dst, workers)
	return el, nil
}

// joinRuns is the row groups' runs in one slice, in order.
func joinRuns(byGroup [][]Run) []Run {
	n := 0
	for _, runs := range byGroup {
		n += len(runs)
	}
	all := make([]Run, 0, n)
	for i, runs := range byGroup {
		all = append(all, runs...)
		byGroup[i] = nil
	}
	return all
}

// fits returns ErrNamesTooBig, with what it would take, when rows rows
// and names names (found in the first done rows) need more than limit.
func fits(path string, limit, rows, names, done int64) error {
	need := RowBytes*rows + NameBytes*names
	if limit <= 0 || need <= limit {
		return nil
	}
	what := fmt.Sprintf("its %d rows need %s (%d bytes a row)", rows, size(RowBytes*rows), RowBytes)
	if names > 0 {
		what += fmt.Sprintf(", and the %d distinct names in its first %d rows %s more (%d bytes a name)", names, done, size(NameBytes*names), NameBytes)
	}
	return fmt.Errorf("rank: %s: %w: %s, over the limit of %s (GOMEMLIMIT, or the machine's memory): rank its ids instead (src_id and dst_id columns: rank --edges FILE --ids, 4.5 bytes an edge and 40 a domain), or use a machine with more memory",
		path, ErrNamesTooBig, what, size(limit))
}

// size writes a number of bytes in MiB or GiB.
func size(b int64) string {
	if b < 1<<30 {
		return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
}

// checkChunks checks the footer's column chunk offsets and sizes against
// the file's size before Arrow reads them: Arrow allocates a chunk's size
// up front and reads chunks on goroutines of its own, where a panic on a
// damaged footer could not be recovered.
func checkChunks(pf *file.Reader, cols []int, size int64) error {
	md := pf.MetaData()
	schema := md.Schema
	for rg := range pf.NumRowGroups() {
		rgm := md.RowGroup(rg)
		if rgm.NumRows() < 0 {
			return fmt.Errorf("row group %d has %d rows", rg, rgm.NumRows())
		}
		for _, c := range cols {
			col, err := rgm.ColumnChunk(c)
			if err != nil {
				return err
			}
			if col.CryptoMetadata() != nil {
				return errors.New("encrypted columns are not supported")
			}
			if want := schema.Column(c).PhysicalType(); col.Type() != want {
				return fmt.Errorf("row group %d, column %s: a chunk of type %s, the schema says %s", rg, schema.Column(c).Path(), col.Type(), want)
			}
			start := col.DataPageOffset()
			if col.HasDictionaryPage() && col.DictionaryPageOffset() > 0 && start > col.DictionaryPageOffset() {
				start = col.DictionaryPageOffset()
			}
			n := col.TotalCompressedSize()
			if start < 0 || n < 0 || start > size || n > size-start || col.NumValues() < 0 {
				return fmt.Errorf("row group %d, column %d: chunk at %d of %d bytes does not fit the file (%d bytes)", rg, c, start, n, size)
			}
		}
	}
	return nil
}

func openEdgeFile(path string) (pf *file.Reader, fr *pqarrow.FileReader, err error) {
	// Open the file here rather than with file.OpenParquetFile, which
	// leaves it open when the footer is bad.
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("rank: edge file: %w", err)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rank: %s: malformed Parquet file: %v", path, r)
		}
		if err != nil {
			f.Close()
		}
	}()
	// Only the footer is read with Arrow (the schema and the chunks'
	// layout, see checkChunks); the readers read the pages with
	// parquet-go.
	pf, err = file.NewParquetReader(f)
	if err != nil {
		return nil, nil, fmt.Errorf("rank: %s is not a readable Parquet file: %w", path, err)
	}
	fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		return nil, nil, fmt.Errorf("rank: %s: %w", path, err)
	}
	return pf, fr, nil
}

// edgeCols are the leaf column indexes of the edge file's columns;
// nofollow is -1 when there is none.
type edgeCols struct{ src, dst, nofollow int }

// sorted lists the columns read, in file order.
func (c edgeCols) sorted() []int {
	cols := []int{c.src, c.dst}
	if c.nofollow >= 0 {
		cols = append(cols, c.nofollow)
	}
	slices.Sort(cols)
	return cols
}

// pickColumns finds the leaf columns src, dst and nofollow (optional) and
// checks their types: names must be strings (or binary), nofollow a bool.
func pickColumns(path string, pf *file.Reader, schema *arrow.Schema) (edgeCols, error) {
	ps := pf.MetaData().Schema
	var found []string
	for i := range ps.NumColumns() {
		found = append(found, ps.Column(i).Path())
	}
	cols := edgeCols{-1, -1, -1}
	for _, name := range []string{colSrc, colDst, colNofollow} {
		idx := ps.ColumnIndexByName(name)
		if idx < 0 {
			if name == colNofollow {
				continue
			}
			return cols, fmt.Errorf("rank: %s has no %q column: need string columns src and dst (found: %s)", path, name, strings.Join(found, ", "))
		}
		fields := schema.FieldIndices(name)
		if len(fields) != 1 {
			return cols, fmt.Errorf("rank: %s: column %q is nested; need a top-level column", path, name)
		}
		t := schema.Field(fields[0]).Type
		if name == colNofollow {
			if t.ID() != arrow.BOOL {
				return cols, fmt.Errorf("rank: %s: column nofollow has type %s, want bool", path, t)
			}
		} else if !nameType(t) {
			return cols, fmt.Errorf("rank: %s: column %s has type %s, want string", path, name, t)
		}
		switch name {
		case colSrc:
			cols.src = idx
		case colDst:
			cols.dst = idx
		default:
			cols.nofollow = idx
		}
	}
	return cols, nil
}

func nameType(t arrow.DataType) bool {
	switch t.ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY:
		return true
	case arrow.DICTIONARY:
		return nameType(t.(*arrow.DictionaryType).ValueType)
	}
	return false
}
