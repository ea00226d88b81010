package rank

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
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
// Parquet file at path with Arrow, a record batch at a time: one goroutine
// decodes the next batch while this one interns the names of the last.
// Nofollow rows add their domains but no edge.
func readEdges(ctx context.Context, path string) (el *edgeList, err error) {
	// The Parquet and Arrow readers panic on some malformed files; a bad
	// input file must give an error, never bring the program down.
	defer func() {
		if r := recover(); r != nil {
			el, err = nil, fmt.Errorf("rank: %s: malformed Parquet file: %v", path, r)
		}
	}()
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("rank: edge file: %w", err)
	}
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, fmt.Errorf("rank: %s is not a readable Parquet file: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{Parallel: true, BatchSize: readBatchRows}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("rank: %s: %w", path, err)
	}
	schema, err := fr.Schema()
	if err != nil {
		return nil, fmt.Errorf("rank: %s: %w", path, err)
	}
	cols, err := pickColumns(path, pf, schema)
	if err != nil {
		return nil, err
	}

	rows := pf.NumRows()
	// Guess the distinct domains from the rows to size the map: a host
	// graph has about a tenth as many domains as edges.
	in := newInterner(int(min(max(rows/8, 1024), 1<<26)))
	el = &edgeList{src: make([]uint32, 0, rows), dst: make([]uint32, 0, rows)}
	if rows == 0 || pf.NumRowGroups() == 0 {
		el.names = in.names
		return el, nil
	}

	rr, err := fr.GetRecordReader(ctx, cols, nil)
	if err != nil {
		return nil, fmt.Errorf("rank: %s: %w", path, err)
	}
	defer rr.Release()

	// Decode ahead in another goroutine; it stops when done is closed.
	recs := make(chan arrow.Record, 2)
	readErr := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(recs)
		defer func() {
			if r := recover(); r != nil {
				readErr <- fmt.Errorf("malformed Parquet file: %v", r)
			}
		}()
		for rr.Next() {
			rec := rr.Record()
			rec.Retain()
			select {
			case recs <- rec:
			case <-done:
				rec.Release()
				return
			}
		}
		if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) { // EOF: the normal end
			readErr <- err
		}
	}()
	defer func() {
		close(done)
		for rec := range recs { // wait for the reader to stop
			rec.Release()
		}
	}()

	b := batchInterner{in: in, el: el, path: path}
	for rec := range recs {
		if err := ctx.Err(); err != nil {
			rec.Release()
			return nil, err
		}
		err := b.add(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
	}
	select {
	case err := <-readErr:
		return nil, fmt.Errorf("rank: %s: %w", path, err)
	default:
	}
	if el.rows != rows {
		return nil, fmt.Errorf("rank: %s: read %d rows, the footer says %d", path, el.rows, rows)
	}
	el.names = in.names
	return el, nil
}

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
	in   *interner
	el   *edgeList
	path string
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

func (b *batchInterner) add(rec arrow.Record) error {
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
				return fmt.Errorf("rank: %s: row %d: %s is null; every edge needs both domain names", b.path, b.el.rows+int64(i), which)
			}
		}
	}
	in, el := b.in, b.el
	// Edge files are usually grouped by source: reuse the last source's id
	// while the name repeats instead of hashing it again.
	lastSrc, lastID := "", uint32(0)
	haveLast := false
	for i := range n {
		s, t := src(i), dst(i)
		if s == "" || t == "" {
			return fmt.Errorf("rank: %s: row %d: empty domain name", b.path, el.rows+int64(i))
		}
		var sid uint32
		if haveLast && s == lastSrc {
			sid = lastID
		} else {
			sid = in.id(s)
			lastSrc, lastID, haveLast = s, sid, true
		}
		tid := in.id(t)
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
