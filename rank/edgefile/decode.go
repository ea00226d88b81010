package edgefile

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// The decoders read the pages of the edge columns with parquet-go and hand
// them over as they are: a plain page's names are a flat buffer with
// offsets, a dictionary-encoded page's names are indexes into its column
// chunk's dictionary, which is hashed (and later interned) once per chunk
// rather than once per row. parquet-go rather than Arrow's column readers
// (which the footer checks still use): Arrow decodes the lengths of
// DELTA_LENGTH_BYTE_ARRAY pages (parquet-go's writer's default for
// strings) a value at a time, which with the copy of every name into a
// buffer of ours cost two thirds of the decoders' time on graphgen's M
// graph; parquet-go's decoders are vectorised and its pages are used in
// place.

// batch is a stretch of one row group's edge columns as a decoder hands
// them over. The columns are not aligned: each holds whole pages, and the
// edgeAssembler lines them up by row.
type batch struct {
	rg       int
	src, dst []nameRun
	nofollow []bool         // nofollow values read (a null is false); nil without the column
	hashes   []uint64       // hashes of the names of plain runs
	changes  []int32        // src plain runs: where a name differs from the one before (see nameRun)
	pages    []parquet.Page // to release once the batch is interned

	// ids[c][k] are the ids shard k gave the names of column c (0: src,
	// 1: dst) that fall in it, by position in the column's runs; other
	// positions are stale. pending counts the shards still at work.
	ids     [2][][]uint32
	pending atomic.Int32
}

// nameRun is one page's names: plain (vals[offs[i]:offs[i+1]]) or
// dictionary-encoded (dict's entries idx[i]).
type nameRun struct {
	vals []byte
	offs []uint32 // n+1 entries
	h0   int      // plain: the run's hashes are batch.hashes[h0:h0+n]
	// plain src runs: batch.changes[c0:c1] are the indexes (from 0, in
	// order) of the names that differ from the name before them: the
	// shards intern one name of each stretch of equal ones.
	c0, c1 int
	dict   *dictNames
	idx    []int32
}

func (r *nameRun) len() int {
	if r.dict != nil {
		return len(r.idx)
	}
	return len(r.offs) - 1
}

// dictNames is a column chunk's dictionary: its names, their hashes, and
// their ids, which each shard fills in for its names on first use. Every
// entry is interned, used or not: writers put in a chunk's dictionary the
// values of that chunk only.
type dictNames struct {
	vals   []byte
	offs   []uint32
	hashes []uint64
	ids    []uint32 // emptyName for an empty name
	done   []bool   // by shard
}

const emptyName = ^uint32(0)

func (b *batch) reset() {
	b.src, b.dst = b.src[:0], b.dst[:0]
	b.nofollow = b.nofollow[:0]
	b.hashes = b.hashes[:0]
	b.changes = b.changes[:0]
	b.pages = b.pages[:0]
}

// release gives the batch's pages back to parquet-go's buffer pools.
func (b *batch) release() {
	for i, p := range b.pages {
		parquet.Release(p)
		b.pages[i] = nil
	}
	b.pages = b.pages[:0]
}

// decoder reads row groups of an edge file into batches.
type decoder struct {
	path     string
	cols     edgeCols
	firstRow []int64      // row group rg is rows firstRow[rg]..firstRow[rg+1]-1
	seed     maphash.Seed // of the shards' hash (see shardSet)
	free     chan *batch
	out      chan<- *batch
	done     <-chan struct{}
	maxDef   [2]byte // of src and dst
	shards   int
	vals     []parquet.Value
}

// run sends the batches of row groups k, k+step, k+2*step, ... until
// done is closed. Each decoder opens the file on its own: parquet-go's
// readers are not safe for concurrent use.
func (d *decoder) run(k, step int) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("malformed Parquet file: %v", r)
		}
	}()
	f, err := os.Open(d.path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	pf, err := parquet.OpenFile(f, fi.Size(),
		parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true), parquet.ReadBufferSize(1<<18))
	if err != nil {
		return fmt.Errorf("not a readable Parquet file: %w", err)
	}
	rgs := pf.RowGroups()
	if len(rgs) != len(d.firstRow)-1 {
		return fmt.Errorf("%d row groups, the footer said %d", len(rgs), len(d.firstRow)-1)
	}
	// Null names are found by their definition levels; the columns are
	// top-level (pickColumns), so a level below the column's maximum is a
	// null.
	d.maxDef = [2]byte{byte(columnMaxDef(pf, colSrc)), byte(columnMaxDef(pf, colDst))}
	for rg := k; rg < len(rgs); rg += step {
		if err := d.rowGroup(rg, rgs[rg]); err != nil {
			return err
		}
	}
	return nil
}

func columnMaxDef(pf *parquet.File, name string) int {
	if c := pf.Root().Column(name); c != nil {
		return c.MaxDefinitionLevel()
	}
	return 0
}

// targetBatchRows is about how many rows of each column a batch holds
// (whole pages: more when pages are bigger).
const targetBatchRows = 1 << 16

// pageCursor reads one column chunk's pages.
type pageCursor struct {
	pages parquet.Pages
	read  int64 // rows read so far
	dict  parquet.Dictionary
	names *dictNames
}

// rowGroup sends the batches of row group rg.
func (d *decoder) rowGroup(rg int, g parquet.RowGroup) error {
	rows := d.firstRow[rg+1] - d.firstRow[rg]
	if g.NumRows() != rows {
		return fmt.Errorf("row group %d has %d rows, the footer said %d", rg, g.NumRows(), rows)
	}
	chunks := g.ColumnChunks()
	idx := []int{d.cols.src, d.cols.dst, d.cols.nofollow}
	var cur [3]*pageCursor
	for c, i := range idx {
		if i < 0 {
			continue
		}
		if i >= len(chunks) {
			return fmt.Errorf("row group %d has %d columns", rg, len(chunks))
		}
		cur[c] = &pageCursor{pages: chunks[i].Pages()}
		defer cur[c].pages.Close()
	}
	for {
		lo := rows
		for _, c := range cur {
			if c != nil {
				lo = min(lo, c.read)
			}
		}
		if lo == rows {
			return nil
		}
		var b *batch
		select {
		case b = <-d.free:
			b.reset()
		case <-d.done:
			return nil
		}
		b.rg = rg
		target := min(rows, lo+targetBatchRows)
		for c, pc := range cur {
			for pc != nil && pc.read < target {
				if err := d.page(b, c, pc, rg, rows); err != nil {
					b.release()
					return err
				}
			}
		}
		select {
		case d.out <- b:
		case <-d.done:
			b.release()
			return nil
		}
	}
}

var colNames = [3]string{colSrc, colDst, colNofollow}

// page reads column c's next page into b.
func (d *decoder) page(b *batch, c int, pc *pageCursor, rg int, rows int64) error {
	p, err := pc.pages.ReadPage()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("column %s ends at row %d, before its row group", colNames[c], d.firstRow[rg]+pc.read)
	}
	if err != nil {
		// parquet-go's errors say what (an unexpected EOF, a bad page
		// header), not where.
		return fmt.Errorf("column %s, row group %d: %w", colNames[c], rg, err)
	}
	n := p.NumRows()
	first := d.firstRow[rg] + pc.read
	if n <= 0 || n > rows-pc.read {
		parquet.Release(p)
		return fmt.Errorf("column %s: a page of %d rows at row %d overruns its row group", colNames[c], n, first)
	}
	pc.read += n
	if c == 2 {
		err := d.nofollow(b, p)
		parquet.Release(p)
		return err
	}
	b.pages = append(b.pages, p)
	if p.NumNulls() > 0 {
		for i, l := range p.DefinitionLevels() {
			if l < d.maxDef[c] {
				return fmt.Errorf("row %d: %s is null; every edge needs both domain names", first+int64(i), colNames[c])
			}
		}
	}
	data := p.Data()
	var run nameRun
	if dict := p.Dictionary(); dict != nil {
		if dict != pc.dict {
			names, err := d.dictionary(dict)
			if err != nil {
				return fmt.Errorf("column %s: %w", colNames[c], err)
			}
			pc.dict, pc.names = dict, names
		}
		if data.Kind() != encoding.Int32 {
			return fmt.Errorf("column %s: dictionary page of %v values", colNames[c], data.Kind())
		}
		run = nameRun{dict: pc.names, idx: data.Int32()}
	} else {
		if data.Kind() != encoding.ByteArray {
			return fmt.Errorf("column %s is stored as %v, want BYTE_ARRAY", colNames[c], data.Kind())
		}
		vals, offs := data.ByteArray()
		run = nameRun{vals: vals, offs: offs}
	}
	if run.len() != int(n) {
		return fmt.Errorf("column %s: page at row %d has %d values for %d rows", colNames[c], first, run.len(), n)
	}
	if run.dict == nil {
		if err := checkOffsets(run.vals, run.offs); err != nil {
			return fmt.Errorf("column %s: page at row %d: %w", colNames[c], first, err)
		}
	}
	if run.dict == nil {
		// Hash here, where the work is spread over the decoders: the hash
		// picks a name's shard and its slot there. Edge files are often
		// grouped by source, so a name like the previous one (most src
		// names) takes its hash.
		run.h0 = len(b.hashes)
		if b.hashes == nil {
			// Room for a batch's two columns, a page over each: growing
			// from empty by doubling cost more than the batches' other
			// buffers together.
			b.hashes = make([]uint64, 0, 3*targetBatchRows)
		}
		b.hashes = slices.Grow(b.hashes, run.len())
		run.c0 = len(b.changes)
		prev, ph := "", uint64(0)
		for i := range run.len() {
			s := run.name(i)
			if i == 0 || s != prev {
				prev, ph = s, maphash.String(d.seed, s)
				if c == 0 {
					b.changes = append(b.changes, int32(i))
				}
			}
			b.hashes = append(b.hashes, ph)
		}
		run.c1 = len(b.changes)
	}
	if c == 0 {
		b.src = append(b.src, run)
	} else {
		b.dst = append(b.dst, run)
	}
	return nil
}

// dictionary copies a column chunk's dictionary (parquet-go reuses its
// buffers for the next chunk) and hashes its names.
func (d *decoder) dictionary(dict parquet.Dictionary) (*dictNames, error) {
	data := dict.Page().Data()
	if data.Kind() != encoding.ByteArray {
		return nil, fmt.Errorf("dictionary of %v values, want BYTE_ARRAY", data.Kind())
	}
	vals, offs := data.ByteArray()
	if len(offs) == 0 {
		offs = []uint32{0}
	}
	if err := checkOffsets(vals, offs); err != nil {
		return nil, fmt.Errorf("dictionary: %w", err)
	}
	dn := &dictNames{vals: append([]byte(nil), vals...), offs: append([]uint32(nil), offs...)}
	dn.hashes = make([]uint64, len(offs)-1)
	dn.ids = make([]uint32, len(dn.hashes))
	dn.done = make([]bool, d.shards)
	r := nameRun{vals: dn.vals, offs: dn.offs}
	for i := range dn.hashes {
		dn.hashes[i] = maphash.String(d.seed, r.name(i))
	}
	return dn, nil
}

// checkOffsets checks that offsets index vals in order, so that name
// never slices out of bounds.
func checkOffsets(vals []byte, offs []uint32) error {
	if len(offs) == 0 {
		return errors.New("no value offsets")
	}
	prev := offs[0]
	for _, o := range offs[1:] {
		if o < prev {
			return errors.New("value offsets out of order")
		}
		prev = o
	}
	if int64(prev) > int64(len(vals)) {
		return errors.New("value offsets out of bounds")
	}
	return nil
}

// name is a plain run's name i, a view into the page.
func (r *nameRun) name(i int) string {
	lo, hi := r.offs[i], r.offs[i+1]
	if lo == hi {
		return ""
	}
	return unsafe.String(&r.vals[lo], int(hi-lo))
}

// nofollow appends a nofollow page's values to b.nofollow, a null as
// false.
func (d *decoder) nofollow(b *batch, p parquet.Page) error {
	n := int(p.NumRows())
	start := len(b.nofollow)
	b.nofollow = slices.Grow(b.nofollow, n)[:start+n]
	got := 0
	var err error
	if br, ok := p.Values().(parquet.BooleanReader); ok && p.DefinitionLevels() == nil {
		// A required column: read the flags without making a Value of
		// each, which cost more than decoding the names.
		got, err = br.ReadBooleans(b.nofollow[start:])
	} else {
		if len(d.vals) < n {
			d.vals = make([]parquet.Value, n)
		}
		got, err = p.Values().ReadValues(d.vals[:n])
		for i, v := range d.vals[:got] {
			b.nofollow[start+i] = !v.IsNull() && v.Boolean()
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if got != n {
		return fmt.Errorf("column nofollow: page has %d values for %d rows", got, n)
	}
	return nil
}
