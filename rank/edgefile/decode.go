package edgefile

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
)

// The readers read the pages of the edge columns with parquet-go and
// intern their names as they go, each page while it is in cache. The
// work is cut into column chunks: a reader takes the src chunk or the
// dst chunk (with nofollow) of a row group at a time, in file order: a
// dst chunk's target ids go at their row numbers in the target array, a
// src chunk's source ids become the row group's runs (see Run), so that
// the two columns of a row group may be read at once by two cores (a file
// of one row group keeps two busy) and nothing has to line them up
// afterwards. A plain page's names are hashed and looked up in groups
// (the next group's table slots prefetched, so that their cache misses
// overlap the lookups of this one: table.prefetch); a
// dictionary-encoded page's names are indexes into its column chunk's
// dictionary, whose entries are interned once. parquet-go rather than
// Arrow's column readers (which the footer checks still use): Arrow
// decodes the lengths of DELTA_LENGTH_BYTE_ARRAY pages (parquet-go's
// writer's default for strings) a value at a time, and parquet-go's
// decoders are vectorised and its pages are used in place.

// readState is what the readers share.
type readState struct {
	ctx      context.Context
	path     string
	cols     edgeCols
	firstRow []int64 // row group rg is rows firstRow[rg]..firstRow[rg+1]-1
	t        *table
	runs     [][]Run      // by row group: its sources, written by the reader of its src chunk
	next     atomic.Int64 // the next chunk to read: 2*rg (src) or 2*rg+1 (dst)
	done     atomic.Int64 // rows whose dst (and nofollow) are read, for progress
	failed   atomic.Bool
	// check, when not nil, is called after every page (the memory limit).
	check func() error
}

const emptyName = ^uint32(0)

// NoEdge is the dst id of a nofollow row in Edges.Dst.
const NoEdge = emptyName

// reader is one worker: it reads column chunks until there are none left
// or another reader failed.
type reader struct {
	st     *readState
	nm     *names
	maxDef [2]byte // of src and dst
	hashes [window]uint64
	starts []int // the first rows of a window's runs of equal source names
	// srcRuns are the runs of the src chunk being read; runsHint, the
	// capacity to start the next with (see chunk).
	srcRuns  []Run
	runsHint int
	sink     uint32
	prev     []byte // src: the last name interned, and its id
	prevID   uint32
	dict     parquet.Dictionary // the dictionary dictIDs are the ids of
	dictID   []uint32
	vals     []parquet.Value
	bools    []bool
}

// run reads chunks until none are left. Each reader opens the file on its
// own: parquet-go's readers are not safe for concurrent use.
func (r *reader) run() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("malformed Parquet file: %v", p)
		}
	}()
	f, err := os.Open(r.st.path)
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
	firstRow := r.st.firstRow
	if len(rgs) != len(firstRow)-1 {
		return fmt.Errorf("%d row groups, the footer said %d", len(rgs), len(firstRow)-1)
	}
	// Null names are found by their definition levels; the columns are
	// top-level (pickColumns), so a level below the column's maximum is a
	// null.
	r.maxDef = [2]byte{byte(columnMaxDef(pf, colSrc)), byte(columnMaxDef(pf, colDst))}
	for !r.st.failed.Load() {
		k := int(r.st.next.Add(1) - 1)
		rg, c := k/2, k%2
		if rg >= len(rgs) {
			return nil
		}
		if err := r.chunk(rg, c, rgs[rg]); err != nil {
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

var colNames = [3]string{colSrc, colDst, colNofollow}

// chunk reads column c (0: src, 1: dst, then nofollow) of row group rg.
func (r *reader) chunk(rg, c int, g parquet.RowGroup) error {
	first, end := r.st.firstRow[rg], r.st.firstRow[rg+1]
	rows := end - first
	if g.NumRows() != rows {
		return fmt.Errorf("row group %d has %d rows, the footer said %d", rg, g.NumRows(), rows)
	}
	r.st.t.reserveRows(end)
	chunks := g.ColumnChunks()
	idx := [3]int{r.st.cols.src, r.st.cols.dst, r.st.cols.nofollow}
	if idx[c] >= len(chunks) || idx[2] >= len(chunks) {
		return fmt.Errorf("row group %d has %d columns", rg, len(chunks))
	}
	pages := chunks[idx[c]].Pages()
	defer pages.Close()
	r.dict, r.prev, r.srcRuns = nil, r.prev[:0], nil
	if c == 0 {
		// As many runs as this reader's last src chunk had, and an
		// eighth: grown from nothing by doubling, the runs were copied
		// about twice over, into fresh memory each time (at L, 0.9
		// CPU-seconds of the read stage's growslice and memmove).
		r.srcRuns = make([]Run, 0, min(int64(r.runsHint), rows))
	}
	for read := int64(0); read < rows; {
		if err := r.st.ctx.Err(); err != nil {
			return err
		}
		if r.st.failed.Load() {
			return nil
		}
		n, err := r.page(pages, c, rg, first+read, rows-read)
		if err != nil {
			return err
		}
		read += n
		if c == 1 && idx[2] < 0 {
			r.st.done.Add(n)
		}
		if r.st.check != nil {
			if err := r.st.check(); err != nil {
				return err
			}
		}
	}
	if c == 0 {
		r.runsHint = len(r.srcRuns) + len(r.srcRuns)/8
		r.st.runs[rg], r.srcRuns = r.srcRuns, nil
	}
	if c == 1 && idx[2] >= 0 {
		return r.nofollowChunk(chunks[idx[2]], first, rows)
	}
	return nil
}

// page reads column c's next page, of at most left rows from file row
// first, and interns its names into the edge array; it returns the rows
// read.
func (r *reader) page(pages parquet.Pages, c, rg int, first, left int64) (int64, error) {
	p, err := pages.ReadPage()
	if errors.Is(err, io.EOF) {
		return 0, fmt.Errorf("column %s ends at row %d, before its row group", colNames[c], first)
	}
	if err != nil {
		// parquet-go's errors say what (an unexpected EOF, a bad page
		// header), not where.
		return 0, fmt.Errorf("column %s, row group %d: %w", colNames[c], rg, err)
	}
	defer parquet.Release(p)
	n := p.NumRows()
	if n <= 0 || n > left {
		return 0, fmt.Errorf("column %s: a page of %d rows at row %d overruns its row group", colNames[c], n, first)
	}
	if p.NumNulls() > 0 {
		for i, l := range p.DefinitionLevels() {
			if l < r.maxDef[c] {
				return 0, fmt.Errorf("row %d: %s is null; every edge needs both domain names", first+int64(i), colNames[c])
			}
		}
	}
	data := p.Data()
	if dict := p.Dictionary(); dict != nil {
		if dict != r.dict {
			if err := r.dictionary(dict); err != nil {
				return 0, fmt.Errorf("column %s: %w", colNames[c], err)
			}
			r.dict = dict
		}
		if data.Kind() != encoding.Int32 {
			return 0, fmt.Errorf("column %s: dictionary page of %v values", colNames[c], data.Kind())
		}
		idx := data.Int32()
		if int64(len(idx)) != n {
			return 0, fmt.Errorf("column %s: page at row %d has %d values for %d rows", colNames[c], first, len(idx), n)
		}
		return n, r.dictRows(c, idx, first)
	}
	if data.Kind() != encoding.ByteArray {
		return 0, fmt.Errorf("column %s is stored as %v, want BYTE_ARRAY", colNames[c], data.Kind())
	}
	vals, offs := data.ByteArray()
	if int64(len(offs)-1) != n {
		return 0, fmt.Errorf("column %s: page at row %d has %d values for %d rows", colNames[c], first, len(offs)-1, n)
	}
	if err := checkOffsets(vals, offs); err != nil {
		return 0, fmt.Errorf("column %s: page at row %d: %w", colNames[c], first, err)
	}
	run := nameRun{vals, offs}
	for lo := 0; lo < int(n); lo += window {
		hi := min(int(n), lo+window)
		var err error
		if c == 0 {
			err = r.sources(run, lo, hi, first)
		} else {
			err = r.targets(run, lo, hi, first)
		}
		if err != nil {
			return 0, err
		}
	}
	return n, nil
}

// nameRun is a plain page's names: vals[offs[i]:offs[i+1]].
type nameRun struct {
	vals []byte
	offs []uint32
}

// name is name i, a view into the page.
func (p nameRun) name(i int) string {
	lo, hi := p.offs[i], p.offs[i+1]
	if lo == hi {
		return ""
	}
	return unsafe.String(&p.vals[lo], int(hi-lo))
}

func emptyNameError(row int64) error { return fmt.Errorf("row %d: empty domain name", row) }

// sources interns the src names lo..hi-1 of a page whose name 0 is at
// file row first, and appends their runs to srcRuns. Edge files are
// often grouped by source, so a name equal to the one before it takes its
// id without a lookup; the first name of each run is looked up as targets
// does (hashed, its slot prefetched a group ahead, then looked up),
// because a new source is most often a new name and its slot a cache
// miss.
func (r *reader) sources(p nameRun, lo, hi int, first int64) error {
	t := r.st.t
	t.enter()
	defer t.exit(r.nm)
	// The runs of equal names: runs[k] is the first row of run k.
	runs, hs := r.starts[:0], r.hashes[:0]
	prev := unsafe.String(unsafe.SliceData(r.prev), len(r.prev))
	i := lo
	for i < hi && len(prev) > 0 && p.name(i) == prev { // the run the last window ended in
		i++
	}
	r.srcRuns = appendRun(r.srcRuns, r.prevID, i-lo)
	for ; i < hi; i++ {
		s := p.name(i)
		if len(runs) > 0 && s == prev {
			continue
		}
		if s == "" {
			return emptyNameError(first + int64(i))
		}
		runs = append(runs, i)
		hs = append(hs, t.hash(s))
		prev = s
	}
	r.starts = runs
	if len(runs) == 0 {
		return nil
	}
	sink := t.prefetch(hs[:min(prefetchGroup, len(runs))])
	for g := 0; g < len(runs); g += prefetchGroup {
		end := min(g+prefetchGroup, len(runs))
		sink += t.prefetch(hs[end:min(end+prefetchGroup, len(runs))])
		for k := g; k < end; k++ {
			id, err := t.id(r.nm, p.name(runs[k]), hs[k])
			if err != nil {
				return err
			}
			stop := hi
			if k+1 < len(runs) {
				stop = runs[k+1]
			}
			r.srcRuns = appendRun(r.srcRuns, id, stop-runs[k])
			r.prevID = id
		}
	}
	r.sink += sink
	r.prev = append(r.prev[:0], p.name(runs[len(runs)-1])...)
	return nil
}

// prefetchGroup is how many names' slots are prefetched at once: a group
// ahead of the lookups. 16 misses in flight is about what a core's fill
// buffers hold.
const prefetchGroup = 16

// targets interns the dst names lo..hi-1 of a page whose name 0 is at
// file row first. The names are hashed first; then they are looked up in
// groups, each group's slots prefetched while the group before it is
// looked up, so that the cache misses (a slot of a table of hundreds of
// MB) overlap each other and the work.
func (r *reader) targets(p nameRun, lo, hi int, first int64) error {
	t := r.st.t
	t.enter()
	defer t.exit(r.nm)
	out := t.dst[first:]
	hs := r.hashes[:hi-lo]
	for i := lo; i < hi; i++ {
		s := p.name(i)
		if s == "" {
			return emptyNameError(first + int64(i))
		}
		hs[i-lo] = t.hash(s)
	}
	sink := t.prefetch(hs[:min(prefetchGroup, hi-lo)])
	for g := lo; g < hi; g += prefetchGroup {
		end := min(g+prefetchGroup, hi)
		sink += t.prefetch(hs[end-lo : min(end+prefetchGroup, hi)-lo])
		for i := g; i < end; i++ {
			id, err := t.id(r.nm, p.name(i), hs[i-lo])
			if err != nil {
				return err
			}
			out[i] = id
		}
	}
	r.sink += sink // keeps portable prefetch's loads from being optimised away
	return nil
}

// dictionary interns every entry of a column chunk's dictionary (writers
// put in a chunk's dictionary the values of that chunk only); an empty
// entry gets emptyName, an error only if a row uses it.
func (r *reader) dictionary(dict parquet.Dictionary) error {
	data := dict.Page().Data()
	if data.Kind() != encoding.ByteArray {
		return fmt.Errorf("dictionary of %v values, want BYTE_ARRAY", data.Kind())
	}
	vals, offs := data.ByteArray()
	if len(offs) == 0 {
		offs = []uint32{0}
	}
	if err := checkOffsets(vals, offs); err != nil {
		return fmt.Errorf("dictionary: %w", err)
	}
	p := nameRun{vals, offs}
	n := len(offs) - 1
	r.dictID = r.dictID[:0]
	for lo := 0; lo < n; lo += window {
		if err := r.dictionaryWindow(p, lo, min(n, lo+window)); err != nil {
			return err
		}
	}
	return nil
}

// dictionaryWindow interns the dictionary entries lo..hi-1 (at most
// window). The read lock is released by a defer, as everywhere a reader
// holds it: a reader that panicked (recovered in run) holding it would
// leave the others waiting for ever on the table's next growth.
func (r *reader) dictionaryWindow(p nameRun, lo, hi int) error {
	t := r.st.t
	t.enter()
	defer t.exit(r.nm)
	for i := lo; i < hi; i++ {
		id := emptyName
		if s := p.name(i); s != "" {
			var err error
			if id, err = t.id(r.nm, s, t.hash(s)); err != nil {
				return err
			}
		}
		r.dictID = append(r.dictID, id)
	}
	return nil
}

// dictRows writes the ids of a dictionary-encoded page's rows, of
// dictionary indexes idx, from file row first: targets into the target
// array, sources as runs.
func (r *reader) dictRows(c int, idx []int32, first int64) error {
	t := r.st.t
	t.mu.RLock() // the target array may grow
	defer t.mu.RUnlock()
	out := t.dst[first:]
	ids := r.dictID
	for i, x := range idx {
		if x < 0 || int(x) >= len(ids) {
			return fmt.Errorf("row %d: dictionary index %d out of range", first+int64(i), x)
		}
		id := ids[x]
		if id == emptyName {
			return emptyNameError(first + int64(i))
		}
		if c == 0 {
			r.srcRuns = appendRun(r.srcRuns, id, 1)
		} else {
			out[i] = id
		}
	}
	return nil
}

// nofollowChunk reads a row group's nofollow column, from file row
// first, and marks the dst of its nofollow rows NoEdge (their domains
// count, the edge does not).
func (r *reader) nofollowChunk(chunk parquet.ColumnChunk, first, rows int64) error {
	pages := chunk.Pages()
	defer pages.Close()
	for read := int64(0); read < rows; {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("column nofollow ends at row %d, before its row group", first+read)
		}
		if err != nil {
			return fmt.Errorf("column nofollow: %w", err)
		}
		n := p.NumRows()
		if n <= 0 || n > rows-read {
			parquet.Release(p)
			return fmt.Errorf("column nofollow: a page of %d rows at row %d overruns its row group", n, first+read)
		}
		err = r.nofollow(p, first+read)
		parquet.Release(p)
		if err != nil {
			return err
		}
		read += n
		r.st.done.Add(n)
	}
	return nil
}

// nofollow marks the nofollow rows of page p, from file row first (a
// null is false).
func (r *reader) nofollow(p parquet.Page, first int64) error {
	n := int(p.NumRows())
	if cap(r.bools) < n {
		r.bools = make([]bool, n)
	}
	flags := r.bools[:n]
	got := 0
	var err error
	if br, ok := p.Values().(parquet.BooleanReader); ok && p.DefinitionLevels() == nil {
		// A required column: read the flags without making a Value of
		// each, which cost more than decoding the names.
		got, err = br.ReadBooleans(flags)
	} else {
		if len(r.vals) < n {
			r.vals = make([]parquet.Value, n)
		}
		got, err = p.Values().ReadValues(r.vals[:n])
		for i, v := range r.vals[:got] {
			flags[i] = !v.IsNull() && v.Boolean()
		}
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if got != n {
		return fmt.Errorf("column nofollow: page has %d values for %d rows", got, n)
	}
	t := r.st.t
	t.mu.RLock() // the edge arrays may grow
	defer t.mu.RUnlock()
	out := t.dst[first : first+int64(n)]
	for i, f := range flags {
		if f {
			out[i] = NoEdge
		}
	}
	return nil
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
