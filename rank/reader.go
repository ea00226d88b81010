package rank

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
)

// edgeList is an edge file read into memory: names by interned id (in
// order of first appearance) and the followed, non-self-loop edges.
type edgeList struct {
	names    []string
	src, dst []uint32
	rows     int64 // rows read, nofollow and self-loops included
}

// Edge file columns.
const (
	colSrc      = "src"
	colDst      = "dst"
	colNofollow = "nofollow"
)

const readBatchRows = 1 << 16

// readEdges reads the src, dst and (if present) nofollow columns of the
// Parquet file at path with Arrow, a record batch at a time. Decoders (one
// per worker, each its own reader of the file, taking every workers-th row
// group) feed this goroutine, which interns the names. Batches arrive in
// no fixed order, which is fine: ids are renumbered by name later and the
// CSR does not depend on the order of edges. Nofollow rows add their
// domains but no edge.
func readEdges(ctx context.Context, path string, workers int) (el *edgeList, err error) {
	// The Parquet and Arrow readers panic on some malformed files; a bad
	// input file must give an error, never bring the program down. (The
	// decoders recover on their own goroutines, see decode.)
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
	hint := min(rows, fi.Size(), 1<<32-1)
	in := newInterner(int(min(max(hint/10, 1024), 1<<24)))
	el = &edgeList{src: make([]uint32, 0, hint), dst: make([]uint32, 0, hint)}
	nrg := pf.NumRowGroups()
	if err := checkChunks(pf, cols, fi.Size()); err != nil {
		return nil, fmt.Errorf("rank: %s: malformed Parquet file: %w", path, err)
	}
	if rows == 0 || nrg == 0 {
		el.names = in.names
		return el, nil
	}
	firstRow := make([]int64, nrg)
	for rg := 1; rg < nrg; rg++ {
		firstRow[rg] = firstRow[rg-1] + pf.MetaData().RowGroup(rg-1).NumRows()
	}

	decoders := max(1, min(workers, nrg))
	recs := make(chan batch, 2*decoders)
	errs := make(chan error, decoders)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for k := range decoders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := decode(ctx, path, cols, k, decoders, firstRow, recs, done); err != nil {
				errs <- err
			}
		}()
	}
	go func() {
		wg.Wait()
		close(recs)
	}()
	// On any return: stop the decoders and wait for them.
	defer func() {
		close(done)
		for b := range recs {
			b.rec.Release()
		}
	}()

	b := batchInterner{in: in, el: el, path: path}
	for r := range recs {
		err := ctx.Err()
		if err == nil {
			err = b.add(r.rec, r.firstRow)
		}
		r.rec.Release()
		if err != nil {
			return nil, err
		}
	}
	select {
	case err := <-errs:
		return nil, fmt.Errorf("rank: %s: %w", path, err)
	default:
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if el.rows != rows {
		return nil, fmt.Errorf("rank: %s: read %d rows, the footer says %d", path, el.rows, rows)
	}
	el.names = in.names
	return el, nil
}

// checkChunks checks the footer's column chunk offsets and sizes against
// the file's size before Arrow reads them: Arrow allocates a chunk's size
// up front and reads chunks on goroutines of its own, where a panic on a
// damaged footer could not be recovered.
func checkChunks(pf *file.Reader, cols []int, size int64) error {
	md := pf.MetaData()
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

// batch is a record batch and the file row of its first row.
type batch struct {
	rec      arrow.Record
	firstRow int64
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
	// Buffered streams read a column chunk through a 1 MiB buffer instead
	// of loading the whole chunk into a fresh allocation.
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	props.BufferedStreamEnabled = true
	props.BufferSize = 1 << 20
	pf, err = file.NewParquetReader(f, file.WithReadProps(props))
	if err != nil {
		return nil, nil, fmt.Errorf("rank: %s is not a readable Parquet file: %w", path, err)
	}
	// Not Parallel: Arrow would decode columns on goroutines of its own,
	// where a panic on a malformed file could not be recovered.
	fr, err = pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: readBatchRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, nil, fmt.Errorf("rank: %s: %w", path, err)
	}
	return pf, fr, nil
}

// decode sends the batches of row groups k, k+step, k+2*step, ... until
// done is closed.
func decode(ctx context.Context, path string, cols []int, k, step int, firstRow []int64, out chan<- batch, done <-chan struct{}) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed Parquet file: %v", r)
		}
	}()
	pf, fr, err := openEdgeFile(path)
	if err != nil {
		return err
	}
	defer pf.Close()
	for rg := k; rg < len(firstRow); rg += step {
		row := firstRow[rg]
		err := func() error {
			rr, err := fr.GetRecordReader(ctx, cols, []int{rg})
			if err != nil {
				return err
			}
			defer rr.Release()
			for rr.Next() {
				rec := rr.Record()
				rec.Retain()
				select {
				case out <- batch{rec, row}:
					row += rec.NumRows()
				case <-done:
					rec.Release()
					return errStopped
				}
			}
			if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) { // EOF: the normal end
				return err
			}
			return nil
		}()
		if err == errStopped {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

var errStopped = errors.New("stopped")

// pickColumns finds the leaf columns src, dst and nofollow (optional) and
// checks their types: names must be strings (or binary), nofollow a bool.
func pickColumns(path string, pf *file.Reader, schema *arrow.Schema) ([]int, error) {
	ps := pf.MetaData().Schema
	var found []string
	for i := range ps.NumColumns() {
		found = append(found, ps.Column(i).Path())
	}
	var cols []int
	for _, name := range []string{colSrc, colDst, colNofollow} {
		idx := ps.ColumnIndexByName(name)
		if idx < 0 {
			if name == colNofollow {
				continue
			}
			return nil, fmt.Errorf("rank: %s has no %q column: need string columns src and dst (found: %s)", path, name, strings.Join(found, ", "))
		}
		fields := schema.FieldIndices(name)
		if len(fields) != 1 {
			return nil, fmt.Errorf("rank: %s: column %q is nested; need a top-level column", path, name)
		}
		t := schema.Field(fields[0]).Type
		if name == colNofollow {
			if t.ID() != arrow.BOOL {
				return nil, fmt.Errorf("rank: %s: column nofollow has type %s, want bool", path, t)
			}
		} else if !nameType(t) {
			return nil, fmt.Errorf("rank: %s: column %s has type %s, want string", path, name, t)
		}
		cols = append(cols, idx)
	}
	slices.Sort(cols)
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

// batchInterner turns record batches into interned edges.
type batchInterner struct {
	hashes []uint64 // reused per batch
	in     *interner
	el     *edgeList
	path   string
}

// stringsOf returns a getter of the i-th value of a name column, as a view
// valid while the batch lives, and whether it is null.
func stringsOf(a arrow.Array) (func(i int) string, error) {
	switch a := a.(type) {
	case *array.String:
		return a.Value, nil
	case *array.LargeString:
		return a.Value, nil
	case *array.Binary:
		return a.ValueString, nil
	case *array.LargeBinary:
		return a.ValueString, nil
	case *array.Dictionary:
		vals, err := stringsOf(a.Dictionary())
		if err != nil {
			return nil, err
		}
		return func(i int) string { return vals(a.GetValueIndex(i)) }, nil
	}
	return nil, fmt.Errorf("unsupported name column type %s", a.DataType())
}

func (b *batchInterner) add(rec arrow.Record, firstRow int64) error {
	sch := rec.Schema()
	col := func(name string) arrow.Array {
		if idx := sch.FieldIndices(name); len(idx) == 1 {
			return rec.Column(idx[0])
		}
		return nil
	}
	srcA, dstA := col(colSrc), col(colDst)
	if srcA == nil || dstA == nil {
		return fmt.Errorf("rank: %s: a record batch lacks src or dst", b.path)
	}
	src, err := stringsOf(srcA)
	if err != nil {
		return fmt.Errorf("rank: %s: column src: %w", b.path, err)
	}
	dst, err := stringsOf(dstA)
	if err != nil {
		return fmt.Errorf("rank: %s: column dst: %w", b.path, err)
	}
	var nofollow *array.Boolean
	if a := col(colNofollow); a != nil {
		nofollow, _ = a.(*array.Boolean)
	}
	n := int(rec.NumRows())
	if srcA.NullN() > 0 || dstA.NullN() > 0 {
		for i := range n {
			if srcA.IsNull(i) || dstA.IsNull(i) {
				which := colSrc
				if !srcA.IsNull(i) {
					which = colDst
				}
				return fmt.Errorf("rank: %s: row %d: %s is null; every edge needs both domain names", b.path, firstRow+int64(i), which)
			}
		}
	}
	in, el := b.in, b.el
	// Edge files are usually grouped by source: reuse the last source's id
	// while the name repeats instead of hashing it again.
	lastSrc, lastID := "", uint32(0)
	haveLast := false
	// Hash every target first, so that the lookups below can touch the
	// slot of a target a few rows ahead: its cache miss then overlaps
	// with the current lookup instead of following it.
	hashes := b.hashes[:0]
	for i := range n {
		hashes = append(hashes, in.hash(dst(i)))
	}
	b.hashes = hashes
	const ahead = 8
	for i := range n {
		if i+ahead < n {
			in.touch(hashes[i+ahead])
		}
		s, t := src(i), dst(i)
		if s == "" || t == "" {
			return fmt.Errorf("rank: %s: row %d: empty domain name", b.path, firstRow+int64(i))
		}
		var sid uint32
		if haveLast && s == lastSrc {
			sid = lastID
		} else {
			sid = in.id(s)
			lastSrc, lastID, haveLast = s, sid, true
		}
		tid := in.idHashed(t, hashes[i])
		if nofollow != nil && nofollow.IsValid(i) && nofollow.Value(i) {
			continue // the domains count, the edge does not
		}
		if sid != tid {
			el.src = append(el.src, sid)
			el.dst = append(el.dst, tid)
		}
	}
	el.rows += int64(n)
	return nil
}
