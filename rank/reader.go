package rank

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/apache/arrow/go/v17/arrow"
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
	if err := checkChunks(pf, cols.sorted(), fi.Size()); err != nil {
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
	recs := make(chan *batch, 2*decoders)
	// Batches go back to the decoders for reuse: a batch's buffers are a
	// few MB, and the decoders would otherwise make a stream of garbage.
	free := make(chan *batch, 4*decoders)
	errs := make(chan error, decoders)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for k := range decoders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := decode(path, cols, k, decoders, firstRow, in.hash, free, recs, done); err != nil {
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
		for range recs {
		}
	}()

	b := batchInterner{in: in, el: el, path: path}
	for r := range recs {
		err := ctx.Err()
		if err == nil {
			err = b.add(r)
		}
		if err != nil {
			return nil, err
		}
		select {
		case free <- r:
		default:
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

// batch is a run of rows of one row group as the decoders hand them over:
// the names copied out of the page buffers, the hashes of the dst names
// and the nofollow flags (nil when the file has no nofollow column).
type batch struct {
	firstRow  int64
	n         int
	src, dst  nameCol
	dstHashes []uint64
	nofollow  []bool
}

// nameCol holds a batch's names back to back: name i is
// buf[off[i]:off[i+1]].
type nameCol struct {
	buf []byte
	off []uint32
}

// at returns name i as a view into buf, valid while the batch is.
func (c *nameCol) at(i int) string {
	lo, hi := c.off[i], c.off[i+1]
	if lo == hi {
		return ""
	}
	return unsafe.String(&c.buf[lo], int(hi-lo))
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
// done is closed. It reads the columns with the Parquet column readers
// rather than Arrow's record reader: Arrow builds string arrays value by
// value, which cost the decoders as much as decompressing and decoding
// the pages (profile of `rank --edges` on graphgen's M graph); here the
// names are copied once into a flat buffer. It also hashes the dst names,
// so that the interning goroutine, which does the rest alone, need not.
// Used batches come back through free.
func decode(path string, cols edgeCols, k, step int, firstRow []int64, hash func(string) uint64, free chan *batch, out chan<- *batch, done <-chan struct{}) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed Parquet file: %v", r)
		}
	}()
	pf, _, err := openEdgeFile(path)
	if err != nil {
		return err
	}
	defer pf.Close()
	var cr columnReaders
	for rg := k; rg < len(firstRow); rg += step {
		rgr := pf.RowGroup(rg)
		if err := cr.open(rgr, cols); err != nil {
			return err
		}
		rows := rgr.NumRows()
		for read := int64(0); read < rows; {
			var b *batch
			select {
			case b = <-free:
			default:
				b = new(batch)
			}
			n := min(readBatchRows, rows-read)
			b.firstRow, b.n = firstRow[rg]+read, int(n)
			if err := cr.read(b, hash); err != nil {
				return err
			}
			read += n
			select {
			case out <- b:
			case <-done:
				return nil
			}
		}
	}
	return nil
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

// columnReaders reads a row group's edge columns in step, a batch at a
// time, with buffers reused from batch to batch.
type columnReaders struct {
	src, dst *file.ByteArrayColumnChunkReader
	nofollow *file.BooleanColumnChunkReader
	vals     []parquet.ByteArray
	bools    []bool
	defs     []int16
}

func (cr *columnReaders) open(rg *file.RowGroupReader, cols edgeCols) error {
	names := func(i int, name string) (*file.ByteArrayColumnChunkReader, error) {
		c, err := rg.Column(i)
		if err != nil {
			return nil, err
		}
		r, ok := c.(*file.ByteArrayColumnChunkReader)
		if !ok {
			return nil, fmt.Errorf("column %s is stored as %s, want BYTE_ARRAY", name, c.Type())
		}
		return r, nil
	}
	var err error
	if cr.src, err = names(cols.src, colSrc); err != nil {
		return err
	}
	if cr.dst, err = names(cols.dst, colDst); err != nil {
		return err
	}
	cr.nofollow = nil
	if cols.nofollow >= 0 {
		c, err := rg.Column(cols.nofollow)
		if err != nil {
			return err
		}
		r, ok := c.(*file.BooleanColumnChunkReader)
		if !ok {
			return fmt.Errorf("column nofollow is stored as %s, want BOOLEAN", c.Type())
		}
		cr.nofollow = r
	}
	return nil
}

// read fills b with its next b.n rows.
func (cr *columnReaders) read(b *batch, hash func(string) uint64) error {
	n := b.n
	if len(cr.vals) < n {
		cr.vals = make([]parquet.ByteArray, n)
		cr.bools = make([]bool, n)
		cr.defs = make([]int16, n)
	}
	if err := cr.names(cr.src, colSrc, b.firstRow, n, &b.src); err != nil {
		return err
	}
	if err := cr.names(cr.dst, colDst, b.firstRow, n, &b.dst); err != nil {
		return err
	}
	b.dstHashes = slices.Grow(b.dstHashes[:0], n)[:n]
	for i := range n {
		b.dstHashes[i] = hash(b.dst.at(i))
	}
	b.nofollow = b.nofollow[:0]
	if cr.nofollow == nil {
		b.nofollow = nil
		return nil
	}
	for got := 0; got < n; {
		total, nv, err := cr.nofollow.ReadBatch(int64(n-got), cr.bools[:n-got], cr.defs[:n-got], nil)
		if err != nil {
			return err
		}
		if total == 0 {
			return fmt.Errorf("column nofollow ends at row %d, before its row group", b.firstRow+int64(got))
		}
		if int(total) == nv {
			b.nofollow = append(b.nofollow, cr.bools[:nv]...)
		} else { // nulls: not nofollow
			maxDef := cr.nofollow.Descriptor().MaxDefinitionLevel()
			v := 0
			for _, d := range cr.defs[:total] {
				f := false
				if d == maxDef {
					f = cr.bools[v]
					v++
				}
				b.nofollow = append(b.nofollow, f)
			}
		}
		got += int(total)
	}
	return nil
}

// names reads n names of a column into c.
func (cr *columnReaders) names(r *file.ByteArrayColumnChunkReader, name string, firstRow int64, n int, c *nameCol) error {
	c.buf = c.buf[:0]
	c.off = append(c.off[:0], 0)
	for got := 0; got < n; {
		total, nv, err := r.ReadBatch(int64(n-got), cr.vals[:n-got], cr.defs[:n-got], nil)
		if err != nil {
			return err
		}
		if total == 0 {
			return fmt.Errorf("column %s ends at row %d, before its row group", name, firstRow+int64(got))
		}
		if int(total) != nv {
			maxDef := r.Descriptor().MaxDefinitionLevel()
			for i, d := range cr.defs[:total] {
				if d != maxDef {
					return fmt.Errorf("row %d: %s is null; every edge needs both domain names", firstRow+int64(got+i), name)
				}
			}
		}
		for _, v := range cr.vals[:nv] {
			c.buf = append(c.buf, v...)
			if len(c.buf) > 1<<32-1 {
				return fmt.Errorf("column %s: names too long", name)
			}
			c.off = append(c.off, uint32(len(c.buf)))
		}
		got += int(total)
	}
	return nil
}

var errStopped = errors.New("stopped")

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

// batchInterner turns record batches into interned edges.
type batchInterner struct {
	in   *interner
	el   *edgeList
	path string
}

// add interns a batch's rows.
func (b *batchInterner) add(r *batch) error {
	in, el := b.in, b.el
	n := r.n
	// Edge files are usually grouped by source: reuse the last source's id
	// while the name repeats instead of hashing it again.
	lastSrc, lastID := "", uint32(0)
	haveLast := false
	hashes := r.dstHashes
	// The lookups go in groups: first touch the slots of a group's
	// targets in a tight loop, so that their cache misses (the table is
	// far bigger than the cache) overlap, then look them up. Touching a
	// few rows ahead inside the lookup loop overlapped less.
	const group = 32
	for g := 0; g < n; g += group {
		end := min(g+group, n)
		for i := g; i < end; i++ {
			in.touch(hashes[i])
		}
		for i := g; i < end; i++ {
			s, t := r.src.at(i), r.dst.at(i)
			if s == "" || t == "" {
				return fmt.Errorf("rank: %s: row %d: empty domain name", b.path, r.firstRow+int64(i))
			}
			var sid uint32
			if haveLast && s == lastSrc {
				sid = lastID
			} else {
				sid = in.id(s)
				lastSrc, lastID, haveLast = s, sid, true
			}
			tid := in.idHashed(t, hashes[i])
			if r.nofollow != nil && r.nofollow[i] {
				continue // the domains count, the edge does not
			}
			if sid != tid {
				el.src = append(el.src, sid)
				el.dst = append(el.dst, tid)
			}
		}
	}
	el.rows += int64(n)
	return nil
}
