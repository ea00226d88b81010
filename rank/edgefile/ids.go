package edgefile

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
)

// An edge file of ids is what the snapshot's edges.parquet is to a
// reader that needs no names: integer columns src_id and dst_id (dense
// domain ids) and a boolean nofollow when present. IDFile streams them,
// in parallel over contiguous stretches of the file, without holding the
// edges: package rank builds its graph in two passes over it
// (rank.ReadIDGraph).

// Edge file id columns.
const (
	ColSrcID = "src_id"
	ColDstID = "dst_id"
)

// Columns tells which kinds of edge columns the Parquet file at path
// has: names (string src and dst) and ids (integer src_id and dst_id).
func Columns(path string) (names, ids bool, err error) {
	pf, f, err := openParquetGo(path)
	if err != nil {
		return false, false, err
	}
	defer f.Close()
	has := func(name string, ok func(parquet.Type) bool) bool {
		leaf, found := pf.Schema().Lookup(name)
		return found && leaf.Node.Leaf() && ok(leaf.Node.Type())
	}
	isName := func(t parquet.Type) bool { return t.Kind() == parquet.ByteArray }
	isID := func(t parquet.Type) bool { return t.Kind() == parquet.Int32 || t.Kind() == parquet.Int64 }
	return has(colSrc, isName) && has(colDst, isName), has(ColSrcID, isID) && has(ColDstID, isID), nil
}

// openParquetGo opens path with parquet-go, a malformed footer an error.
func openParquetGo(path string) (pf *parquet.File, f *os.File, err error) {
	f, err = os.Open(path)
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
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, fmt.Errorf("rank: %w", err)
	}
	pf, err = parquet.OpenFile(f, fi.Size(),
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(1<<18))
	if err != nil {
		return nil, nil, fmt.Errorf("rank: %s is not a readable Parquet file: %w", path, err)
	}
	return pf, f, nil
}

// IDFile is an edge file of ids opened for streaming.
type IDFile struct {
	path     string
	rows     int64
	firstRow []int64 // row group rg is rows firstRow[rg]..firstRow[rg+1]-1
	col      [3]int  // leaf column indexes of src_id, dst_id, nofollow (-1: none)
	maxDef   [3]int
	maxID    int64 // the largest id by the footer's statistics; -1: not known
}

// OpenIDs opens the edge file of ids at path: it checks the footer and
// the columns' types.
func OpenIDs(path string) (*IDFile, error) {
	pf, f, err := openParquetGo(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	idf := &IDFile{path: path, rows: pf.NumRows(), col: [3]int{-1, -1, -1}, maxID: -1}
	var found []string
	for _, c := range pf.Schema().Columns() {
		found = append(found, strings.Join(c, "."))
	}
	for i, name := range []string{ColSrcID, ColDstID, colNofollow} {
		leaf, ok := pf.Schema().Lookup(name)
		if !ok {
			if i == 2 {
				continue
			}
			return nil, fmt.Errorf("rank: %s has no %q column: need integer columns src_id and dst_id (found: %s)", path, name, strings.Join(found, ", "))
		}
		if leaf.MaxRepetitionLevel > 0 || !leaf.Node.Leaf() {
			return nil, fmt.Errorf("rank: %s: column %q is repeated or nested; need a top-level column", path, name)
		}
		kind := leaf.Node.Type().Kind()
		switch {
		case i == 2 && kind != parquet.Boolean:
			return nil, fmt.Errorf("rank: %s: column nofollow has type %s, want bool", path, leaf.Node.Type())
		case i < 2 && kind != parquet.Int32 && kind != parquet.Int64:
			return nil, fmt.Errorf("rank: %s: column %s has type %s, want an integer id", path, name, leaf.Node.Type())
		}
		idf.col[i], idf.maxDef[i] = leaf.ColumnIndex, leaf.MaxDefinitionLevel
	}
	if idf.rows < 0 {
		return nil, fmt.Errorf("rank: %s: malformed Parquet file: %d rows", path, idf.rows)
	}
	md := pf.Metadata()
	idf.firstRow = make([]int64, len(md.RowGroups)+1)
	maxID, statsKnown := int64(-1), true
	for rg, g := range md.RowGroups {
		if g.NumRows < 0 {
			return nil, fmt.Errorf("rank: %s: malformed Parquet file: row group %d has %d rows", path, rg, g.NumRows)
		}
		idf.firstRow[rg+1] = idf.firstRow[rg] + g.NumRows
		for _, c := range idf.col[:2] {
			if c >= len(g.Columns) {
				return nil, fmt.Errorf("rank: %s: malformed Parquet file: row group %d has %d columns", path, rg, len(g.Columns))
			}
			m, ok := statMax(g.Columns[c].MetaData.Statistics, g.Columns[c].MetaData.Type)
			if !ok {
				statsKnown = statsKnown && g.NumRows == 0
				continue
			}
			maxID = max(maxID, m)
		}
	}
	if n := idf.firstRow[len(md.RowGroups)]; n != idf.rows {
		return nil, fmt.Errorf("rank: %s: malformed Parquet file: the footer says %d rows, its row groups %d", path, idf.rows, n)
	}
	if statsKnown {
		idf.maxID = maxID
	}
	return idf, nil
}

// statMax is the maximum a column chunk's statistics give, if any.
func statMax(s format.Statistics, t format.Type) (int64, bool) {
	b := s.MaxValue
	if len(b) == 0 {
		b = s.Max // older writers: signed order, the same for ids
	}
	switch {
	case t == format.Int32 && len(b) == 4:
		return int64(int32(binary.LittleEndian.Uint32(b))), true
	case t == format.Int64 && len(b) == 8:
		return int64(binary.LittleEndian.Uint64(b)), true
	}
	return 0, false
}

// Rows is the number of rows of the file.
func (f *IDFile) Rows() int64 { return f.rows }

// MaxID is the largest id in the file by its footer's statistics, or -1
// when the footer does not say (a reader must still check every id).
func (f *IDFile) MaxID() int64 { return f.maxID }

// HasNofollow tells whether the file has the nofollow column.
func (f *IDFile) HasNofollow() bool { return f.col[2] >= 0 }

// Parts splits the file into at most k stretches of whole row groups,
// of about equal rows, in file order: part i is rows Parts(k)[i] to
// Parts(k)[i+1]-1. Scan reads each on its own goroutine.
func (f *IDFile) Parts(k int) []int64 {
	return partRows(f.firstRow, k)
}

// partRows cuts row groups into at most k runs of about equal rows and
// returns their first rows (and the end).
func partRows(firstRow []int64, k int) []int64 {
	nrg := len(firstRow) - 1
	k = max(1, min(k, nrg))
	total := firstRow[nrg]
	bounds := []int64{0}
	rg := 0
	for p := 1; p < k; p++ {
		want := total * int64(p) / int64(k)
		for rg < nrg && firstRow[rg] < want {
			rg++
		}
		if firstRow[rg] > bounds[len(bounds)-1] && firstRow[rg] < total {
			bounds = append(bounds, firstRow[rg])
		}
	}
	return append(bounds, total)
}

// IDBatch is a stretch of rows of an edge file of ids: row Row+i has
// Src[i] (when asked for), Dst[i] and Nofollow[i] (nil when the file has
// no nofollow column). A batch is valid only during the call it is given
// to.
type IDBatch struct {
	Row      int64
	Src, Dst []uint32
	Nofollow []bool
}

// idBatchRows is about how many rows a batch holds.
const idBatchRows = 1 << 16

// Scan reads the file in the parts Parts(parts) gives, each on its own
// goroutine and in row order, and calls fn(part, batch) for every batch
// of rows, in order within a part (calls for different parts run at
// once). withSrc false leaves src_id unread (Src nil). A negative id,
// one past 2³²-1 or a null is an error naming its row. Scan stops at the
// first error, fn's or the file's, and returns it.
func (f *IDFile) Scan(ctx context.Context, parts int, withSrc bool, fn func(part int, b *IDBatch) error) error {
	bounds := f.Parts(parts)
	var failed atomic.Bool
	errs := make([]error, len(bounds)-1)
	var wg sync.WaitGroup
	for p := range len(bounds) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := f.scanPart(ctx, &failed, bounds[p], bounds[p+1], withSrc, func(b *IDBatch) error { return fn(p, b) })
			if err != nil {
				errs[p] = err
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...) // at most the first few: the others stop at the first
}

// scanPart reads the row groups of rows lo..hi-1.
func (f *IDFile) scanPart(ctx context.Context, failed *atomic.Bool, lo, hi int64, withSrc bool, fn func(b *IDBatch) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("rank: %s: malformed Parquet file: %v", f.path, r)
		}
	}()
	pf, file, err := openParquetGo(f.path)
	if err != nil {
		return err
	}
	defer file.Close()
	rgs := pf.RowGroups()
	if len(rgs) != len(f.firstRow)-1 {
		return fmt.Errorf("rank: %s changed while it was read: %d row groups, then %d", f.path, len(f.firstRow)-1, len(rgs))
	}
	cols := []int{0, 1, 2}
	if !withSrc {
		cols = []int{1, 2}
	}
	var r rowGroupReader
	r.f = f
	for rg := range rgs {
		if f.firstRow[rg] < lo || f.firstRow[rg] >= hi {
			continue
		}
		if err := r.read(ctx, failed, rg, rgs[rg], cols, fn); err != nil {
			return err
		}
	}
	return nil
}

// rowGroupReader reads a row group's id columns page by page and lines
// them up by row (each column's pages end where they will).
type rowGroupReader struct {
	f        *IDFile
	ids      [2][]uint32 // values read and not yet handed over, src_id and dst_id
	nofollow []bool
	batch    IDBatch
}

func (r *rowGroupReader) read(ctx context.Context, failed *atomic.Bool, rg int, g parquet.RowGroup, cols []int, fn func(b *IDBatch) error) error {
	f := r.f
	rows := f.firstRow[rg+1] - f.firstRow[rg]
	if g.NumRows() != rows {
		return fmt.Errorf("rank: %s changed while it was read: row group %d has %d rows, the footer said %d", f.path, rg, g.NumRows(), rows)
	}
	chunks := g.ColumnChunks()
	var pages [3]parquet.Pages
	var read [3]int64 // rows read per column
	for _, c := range cols {
		if f.col[c] < 0 {
			continue
		}
		if f.col[c] >= len(chunks) {
			return fmt.Errorf("rank: %s: malformed Parquet file: row group %d has %d columns", f.path, rg, len(chunks))
		}
		pages[c] = chunks[f.col[c]].Pages()
		defer pages[c].Close()
	}
	r.ids[0], r.ids[1], r.nofollow = r.ids[0][:0], r.ids[1][:0], r.nofollow[:0]
	done := int64(0) // rows handed over
	for done < rows {
		if failed.Load() {
			return nil // another part failed: its error is the one to tell
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		want := min(rows, done+idBatchRows)
		k := rows
		for _, c := range cols {
			if pages[c] == nil {
				continue
			}
			for read[c] < want {
				n, err := r.page(pages[c], c, f.firstRow[rg]+read[c], rows-read[c])
				if err != nil {
					return err
				}
				read[c] += n
			}
			k = min(k, read[c])
		}
		n := int(k - done)
		b := &r.batch
		*b = IDBatch{Row: f.firstRow[rg] + done, Dst: r.ids[1][:n]}
		if pages[0] != nil {
			b.Src = r.ids[0][:n]
		}
		if pages[2] != nil {
			b.Nofollow = r.nofollow[:n]
		}
		if err := fn(b); err != nil {
			return err
		}
		done = k
		r.ids[0] = r.ids[0][:copy(r.ids[0], r.ids[0][min(n, len(r.ids[0])):])]
		r.ids[1] = r.ids[1][:copy(r.ids[1], r.ids[1][n:])]
		r.nofollow = r.nofollow[:copy(r.nofollow, r.nofollow[min(n, len(r.nofollow)):])]
	}
	return nil
}

var idColNames = [3]string{ColSrcID, ColDstID, colNofollow}

// page reads column c's next page (of at most left rows; its first row is
// row) and appends its values.
func (r *rowGroupReader) page(pages parquet.Pages, c int, row, left int64) (int64, error) {
	f := r.f
	p, err := pages.ReadPage()
	if errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("rank: %s: malformed Parquet file: column %s ends at row %d, before its row group", f.path, idColNames[c], row)
	}
	if err != nil {
		return 0, fmt.Errorf("rank: %s: column %s at row %d: %w", f.path, idColNames[c], row, err)
	}
	defer parquet.Release(p)
	n := p.NumRows()
	if n <= 0 || n > left {
		return 0, fmt.Errorf("rank: %s: malformed Parquet file: column %s: a page of %d rows at row %d overruns its row group", f.path, idColNames[c], n, row)
	}
	if c == 2 {
		start := len(r.nofollow)
		r.nofollow, err = appendBools(r.nofollow, p)
		if err == nil && len(r.nofollow)-start != int(n) {
			err = fmt.Errorf("a page of %d rows has %d values", n, len(r.nofollow)-start)
		}
		if err != nil {
			return 0, fmt.Errorf("rank: %s: column nofollow at row %d: %w", f.path, row, err)
		}
		return n, nil
	}
	if p.NumNulls() > 0 {
		for i, l := range p.DefinitionLevels() {
			if int(l) < f.maxDef[c] {
				return 0, fmt.Errorf("rank: %s: row %d: %s is null; every edge needs both ids", f.path, row+int64(i), idColNames[c])
			}
		}
	}
	start := len(r.ids[c])
	out, bad, err := appendIDs(r.ids[c], p)
	r.ids[c] = out
	if err != nil {
		return 0, fmt.Errorf("rank: %s: column %s at row %d: %w", f.path, idColNames[c], row, err)
	}
	if bad >= 0 {
		return 0, fmt.Errorf("rank: %s: row %d: %s is not an id from 0 to 2³²-1", f.path, row+int64(bad), idColNames[c])
	}
	if got := len(r.ids[c]) - start; got != int(n) {
		return 0, fmt.Errorf("rank: %s: malformed Parquet file: column %s: a page of %d rows at row %d has %d values", f.path, idColNames[c], n, row, got)
	}
	return n, nil
}

// appendIDs appends an id page's values to out; bad is the index in the
// page of the first value that is not an id (negative or 2³² and above),
// -1 if none.
func appendIDs(out []uint32, p parquet.Page) (_ []uint32, bad int, err error) {
	data := p.Data()
	if dict := p.Dictionary(); dict != nil {
		if data.Kind() != encoding.Int32 {
			return out, -1, fmt.Errorf("dictionary page of %v values", data.Kind())
		}
		var vals []uint32
		vals, bad, err = appendIDs(nil, dict.Page())
		if err != nil || bad >= 0 {
			return out, -1, fmt.Errorf("dictionary: bad value")
		}
		for i, x := range data.Int32() {
			if x < 0 || int(x) >= len(vals) {
				return out, -1, fmt.Errorf("dictionary index %d of row %d out of range", x, i)
			}
			out = append(out, vals[x])
		}
		return out, -1, nil
	}
	switch data.Kind() {
	case encoding.Int32:
		vals := data.Int32()
		start := len(out)
		out = append(out, make([]uint32, len(vals))...)
		dst := out[start:]
		neg := int32(0)
		for i, x := range vals {
			dst[i] = uint32(x)
			neg |= x
		}
		if neg < 0 {
			for i, x := range vals {
				if x < 0 {
					return out, i, nil
				}
			}
		}
	case encoding.Int64:
		for i, x := range data.Int64() {
			if x < 0 || x > math.MaxUint32 {
				return out, i, nil
			}
			out = append(out, uint32(x))
		}
	default:
		return out, -1, fmt.Errorf("stored as %v, want INT32 or INT64", data.Kind())
	}
	return out, -1, nil
}

// appendBools appends a boolean page's values to out, a null as false.
func appendBools(out []bool, p parquet.Page) ([]bool, error) {
	n := int(p.NumRows())
	start := len(out)
	out = append(out, make([]bool, n)...)
	if br, ok := p.Values().(parquet.BooleanReader); ok && p.DefinitionLevels() == nil {
		got, err := br.ReadBooleans(out[start:])
		if err != nil && !errors.Is(err, io.EOF) {
			return out, err
		}
		return out[:start+got], nil
	}
	vals := make([]parquet.Value, n)
	got, err := p.Values().ReadValues(vals)
	if err != nil && !errors.Is(err, io.EOF) {
		return out, err
	}
	for i, v := range vals[:got] {
		out[start+i] = !v.IsNull() && v.Boolean()
	}
	return out[:start+got], nil
}
