package site

// Every read of a snapshot's files goes through this file, so that the
// server's use of package snapshot is in one place. The rest of the package
// sees only source and the decoded batches of columns below.
//
// The files are read column by column, a row group at a time, straight
// from parquet-go's pages (plain pages used in place, dictionary pages
// looked up), rather than through parquet-go's row reader: that one builds
// every row from parquet.Values by reflection, which cost most of the load
// time of a million-domain snapshot. Row groups are decoded in parallel,
// each worker with its own reader of the file.

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
	"golang.org/x/sync/errgroup"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// source is one opened snapshot: its manifest, and its files' columns.
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

// ---- the files' columns as the server reads them ----------------------
//
// Each batch is one row group, decoded: entry i of each column is row
// First+i of the file. Nulls are read as a value no row has (noted per
// column), which is how the index keeps them anyway. A batch and its
// byte arrays are reused for the next row group: copy what you keep.

// domainBatch: domains.parquet.
type domainBatch struct {
	First                        int
	ID                           []int32
	Domain                       byteArrays
	Rank, PrevRank               []int64 // 0: null
	Score                        []float64
	InDomains, OutDomains        []int64
	Tier, RevisitDays, Pages     []int32
	FirstSeen                    []int64 // Unix microseconds
	LastVisit, NextVisit         []int64 // noTime: null
	LastStatus                   []int32 // -1: null
	LastOutcome, NetworkOperator byteArrays
	HTTPS, IPv6                  []uint8 // boolNull, boolFalse, boolTrue
	ASN                          []int64 // 0: null
	OptedOut                     []uint8
	Failures                     []int32
	MapX, MapY                   []float64 // NaN: null
	Community                    []int32   // -1: null
}

// Tri-state booleans.
const (
	boolNull uint8 = iota
	boolFalse
	boolTrue
)

var domainColumns = []colSpec{
	{"id", parquet.Int32, false}, {"domain", parquet.ByteArray, false}, {"rank", parquet.Int64, false},
	{"prev_rank", parquet.Int64, false}, {"score", parquet.Double, false}, {"in_domains", parquet.Int64, false},
	{"out_domains", parquet.Int64, false}, {"tier", parquet.Int32, false}, {"revisit_days", parquet.Int32, false},
	{"pages_per_visit", parquet.Int32, false}, {"first_seen", parquet.Int64, true}, {"last_visit", parquet.Int64, true},
	{"next_visit", parquet.Int64, true}, {"last_status", parquet.Int32, false}, {"last_outcome", parquet.ByteArray, false},
	{"https", parquet.Boolean, false}, {"ipv6", parquet.Boolean, false}, {"asn", parquet.Int64, false},
	{"network_operator", parquet.ByteArray, false}, {"opted_out", parquet.Boolean, false}, {"failures", parquet.Int32, false},
	{"map_x", parquet.Double, false}, {"map_y", parquet.Double, false}, {"community", parquet.Int32, false},
}

func decodeDomains(rg *rowGroup, b *domainBatch) error {
	b.First = rg.first
	n := rg.rows
	b.ID, b.Rank, b.PrevRank = grow(b.ID, n), grow(b.Rank, n), grow(b.PrevRank, n)
	b.Score, b.InDomains, b.OutDomains = grow(b.Score, n), grow(b.InDomains, n), grow(b.OutDomains, n)
	b.Tier, b.RevisitDays, b.Pages = grow(b.Tier, n), grow(b.RevisitDays, n), grow(b.Pages, n)
	b.FirstSeen, b.LastVisit, b.NextVisit = grow(b.FirstSeen, n), grow(b.LastVisit, n), grow(b.NextVisit, n)
	b.LastStatus, b.HTTPS, b.IPv6, b.ASN = grow(b.LastStatus, n), grow(b.HTTPS, n), grow(b.IPv6, n), grow(b.ASN, n)
	b.OptedOut, b.Failures, b.MapX, b.MapY = grow(b.OptedOut, n), grow(b.Failures, n), grow(b.MapX, n), grow(b.MapY, n)
	b.Community = grow(b.Community, n)
	return errors.Join(
		rg.int32s("id", b.ID, 0), rg.byteArrays("domain", &b.Domain),
		rg.int64s("rank", b.Rank, 0), rg.int64s("prev_rank", b.PrevRank, 0),
		rg.float64s("score", b.Score, 0), rg.int64s("in_domains", b.InDomains, 0), rg.int64s("out_domains", b.OutDomains, 0),
		rg.int32s("tier", b.Tier, 0), rg.int32s("revisit_days", b.RevisitDays, 0), rg.int32s("pages_per_visit", b.Pages, 0),
		rg.micros("first_seen", b.FirstSeen, noTime), rg.micros("last_visit", b.LastVisit, noTime),
		rg.micros("next_visit", b.NextVisit, noTime), rg.int32s("last_status", b.LastStatus, -1),
		rg.byteArrays("last_outcome", &b.LastOutcome), rg.bools("https", b.HTTPS), rg.bools("ipv6", b.IPv6),
		rg.int64s("asn", b.ASN, 0), rg.byteArrays("network_operator", &b.NetworkOperator), rg.bools("opted_out", b.OptedOut),
		rg.int32s("failures", b.Failures, 0), rg.float64s("map_x", b.MapX, math.NaN()), rg.float64s("map_y", b.MapY, math.NaN()),
		rg.int32s("community", b.Community, -1))
}

// domains opens domains.parquet (stored in id order).
func (s *source) domains() (*table[domainBatch], error) {
	return openTable(s.snap.Files, data.DomainsFile, domainColumns, decodeDomains)
}

// edgeBatch: edges.parquet (stored by src_id, then dst_id), the columns
// the server keeps: four of ten million rows rather than eight (two of
// them strings).
type edgeBatch struct {
	First              int
	SrcID, DstID       []int32
	Nofollow, Sitewide []uint8 // tri-state
}

var edgeColumns = []colSpec{
	{"src_id", parquet.Int32, false}, {"dst_id", parquet.Int32, false},
	{"nofollow", parquet.Boolean, false}, {"sitewide", parquet.Boolean, false},
}

func decodeEdges(rg *rowGroup, b *edgeBatch) error {
	b.First = rg.first
	n := rg.rows
	b.SrcID, b.DstID, b.Nofollow, b.Sitewide = grow(b.SrcID, n), grow(b.DstID, n), grow(b.Nofollow, n), grow(b.Sitewide, n)
	// A null id matches no domain (ids are never negative).
	return errors.Join(rg.int32s("src_id", b.SrcID, -1), rg.int32s("dst_id", b.DstID, -1),
		rg.bools("nofollow", b.Nofollow), rg.bools("sitewide", b.Sitewide))
}

func (s *source) edges() (*table[edgeBatch], error) {
	return openTable(s.snap.Files, data.EdgesFile, edgeColumns, decodeEdges)
}

// linkWordBatch: link_words.parquet.
type linkWordBatch struct {
	First        int
	Domain, Word byteArrays
	Sites        []int64
}

var linkWordColumns = []colSpec{{"domain", parquet.ByteArray, false}, {"word", parquet.ByteArray, false}, {"sites", parquet.Int64, false}}

func decodeLinkWords(rg *rowGroup, b *linkWordBatch) error {
	b.First = rg.first
	b.Sites = grow(b.Sites, rg.rows)
	return errors.Join(rg.byteArrays("domain", &b.Domain), rg.byteArrays("word", &b.Word), rg.int64s("sites", b.Sites, 0))
}

func (s *source) linkWords() (*table[linkWordBatch], error) {
	return openTable(s.snap.Files, data.LinkWordsFile, linkWordColumns, decodeLinkWords)
}

// scheduleBatch: schedule.parquet, the columns a domain page shows.
type scheduleBatch struct {
	First          int
	Domain, Reason byteArrays
	NextVisit      []int64 // Unix microseconds; noTime: null
	Pages          []int32
	Priority       []int64
}

var scheduleColumns = []colSpec{
	{"domain", parquet.ByteArray, false}, {"next_visit", parquet.Int64, true}, {"pages", parquet.Int32, false},
	{"reason", parquet.ByteArray, false}, {"priority", parquet.Int64, false},
}

func decodeSchedule(rg *rowGroup, b *scheduleBatch) error {
	b.First = rg.first
	n := rg.rows
	b.NextVisit, b.Pages, b.Priority = grow(b.NextVisit, n), grow(b.Pages, n), grow(b.Priority, n)
	return errors.Join(rg.byteArrays("domain", &b.Domain), rg.micros("next_visit", b.NextVisit, noTime),
		rg.int32s("pages", b.Pages, 0), rg.byteArrays("reason", &b.Reason), rg.int64s("priority", b.Priority, 0))
}

func (s *source) schedule() (*table[scheduleBatch], error) {
	return openTable(s.snap.Files, data.ScheduleFile, scheduleColumns, decodeSchedule)
}

// visitBatch: visits.parquet (stored by domain, then time), the columns a
// domain page shows.
type visitBatch struct {
	First                 int
	Domain, Outcome       byteArrays
	Error                 byteArrays // nulls noted
	StartedAt, FinishedAt []int64    // Unix microseconds
	HTTPStatus, Pages     []int32
	Bytes                 []int64
}

var visitFileColumns = []colSpec{
	{"domain", parquet.ByteArray, false}, {"started_at", parquet.Int64, true}, {"finished_at", parquet.Int64, true},
	{"outcome", parquet.ByteArray, false}, {"http_status", parquet.Int32, false}, {"pages", parquet.Int32, false},
	{"bytes", parquet.Int64, false}, {"error", parquet.ByteArray, false},
}

func decodeVisits(rg *rowGroup, b *visitBatch) error {
	b.First = rg.first
	n := rg.rows
	b.StartedAt, b.FinishedAt, b.HTTPStatus = grow(b.StartedAt, n), grow(b.FinishedAt, n), grow(b.HTTPStatus, n)
	b.Pages, b.Bytes = grow(b.Pages, n), grow(b.Bytes, n)
	return errors.Join(rg.byteArrays("domain", &b.Domain), rg.micros("started_at", b.StartedAt, 0),
		rg.micros("finished_at", b.FinishedAt, 0), rg.byteArrays("outcome", &b.Outcome),
		rg.int32s("http_status", b.HTTPStatus, 0), rg.int32s("pages", b.Pages, 0), rg.int64s("bytes", b.Bytes, 0),
		rg.byteArrays("error", &b.Error))
}

func (s *source) visits() (*table[visitBatch], error) {
	return openTable(s.snap.Files, data.VisitsFile, visitFileColumns, decodeVisits)
}

// ---- reading Parquet columns -------------------------------------------

// colSpec is a column a table reads: its name, physical type, and whether
// it must be a timestamp (read as Unix microseconds whatever its unit).
type colSpec struct {
	name      string
	kind      parquet.Kind
	timestamp bool
}

// leaf is a column of the file as found by openTable.
type leaf struct {
	index  int
	maxDef byte
	unit   int64 // timestamps: nanoseconds in the file's unit
}

// table is a snapshot file opened for reading its columns by row group
// into batches of type B.
type table[B any] struct {
	path     string
	f        snapshot.File // read at offsets by every worker at once
	size     int64
	firstRow []int // row group g is rows firstRow[g] to firstRow[g+1]-1
	leaves   map[string]leaf
	decode   func(*rowGroup, *B) error
}

// openTable opens file name of the snapshot and checks that it has every column of cols, of
// the right type, and that its row groups add up: a column missing (which
// parquet-go would read as zeros) or of another type is an error, as is a
// damaged file (parquet-go panics on some; those become errors here).
func openTable[B any](files snapshot.Files, name string, cols []colSpec, decode func(*rowGroup, *B) error) (t *table[B], err error) {
	path := files.Location(name)
	f, err := files.Open(name)
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", path, snapshot.ErrNotParquet, r)
		}
		if err != nil {
			f.Close()
		}
	}()
	t = &table[B]{path: path, f: f, size: f.Size(), leaves: map[string]leaf{}, decode: decode}
	pf, err := t.open()
	if err != nil {
		return nil, err
	}
	schema := pf.Schema()
	for _, c := range cols {
		lc, ok := schema.Lookup(c.name)
		if !ok {
			return nil, t.errorf("no column %q", c.name)
		}
		kind := lc.Node.Type().Kind()
		if len(lc.Path) != 1 || lc.MaxRepetitionLevel != 0 || lc.MaxDefinitionLevel > 1 {
			return nil, t.errorf("column %q is nested or repeated", c.name)
		}
		if kind != c.kind {
			return nil, t.errorf("column %q is %v, want %v", c.name, kind, c.kind)
		}
		l := leaf{index: lc.ColumnIndex, maxDef: byte(lc.MaxDefinitionLevel)}
		if c.timestamp {
			var ts *format.TimestampType
			if lt := lc.Node.Type().LogicalType(); lt != nil {
				ts, _ = lt.Value.(*format.TimestampType)
			}
			if ts == nil || ts.Unit.Value == nil || ts.Unit.Value.Duration() <= 0 {
				return nil, t.errorf("column %q is not a timestamp", c.name)
			}
			l.unit = int64(ts.Unit.Value.Duration())
		}
		t.leaves[c.name] = l
	}
	// Sizes are taken from the footer, but only as far as the file's size
	// allows (a row of any snapshot file takes more than a bit): a damaged
	// footer must not make the server allocate gigabytes.
	limit := 8*t.size + 1024
	t.firstRow = []int{0}
	for _, rg := range pf.RowGroups() {
		n := rg.NumRows()
		last := int64(t.firstRow[len(t.firstRow)-1])
		if n < 0 || n > limit-last {
			return nil, t.errorf("the footer says %d more rows after %d, more than a file of %d bytes holds", n, last, t.size)
		}
		t.firstRow = append(t.firstRow, int(last+n))
	}
	if n := pf.NumRows(); n != int64(t.rows()) {
		return nil, t.errorf("the footer says %d rows, its row groups %d", n, t.rows())
	}
	return t, nil
}

func (t *table[B]) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %w: %s", t.path, snapshot.ErrNotParquet, fmt.Sprintf(format, args...))
}

// open reads the file's footer: each worker has its own reader, as
// parquet-go's are not safe for concurrent use.
func (t *table[B]) open() (*parquet.File, error) {
	pf, err := parquet.OpenFile(t.f, t.size, parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true),
		parquet.ReadBufferSize(1<<18))
	if err != nil {
		return nil, t.errorf("%v", err)
	}
	return pf, nil
}

// rows is the number of rows of the file.
func (t *table[B]) rows() int { return t.firstRow[len(t.firstRow)-1] }

func (t *table[B]) close() error { return t.f.Close() }

// scan decodes every row group into a batch and calls fn with it, on up
// to workers goroutines at once, in no fixed order (workers 1: in file
// order). fn may keep nothing of the batch past its return.
func (t *table[B]) scan(workers int, fn func(*B) error) error {
	groups := len(t.firstRow) - 1
	workers = max(1, min(workers, groups))
	var next atomic.Int64
	var g errgroup.Group
	for range workers {
		g.Go(func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					err = t.errorf("%v", r)
				}
				if err != nil {
					next.Store(int64(groups)) // the others stop at their next row group
				}
			}()
			pf, err := t.open()
			if err != nil {
				return err
			}
			rgs := pf.RowGroups()
			if len(rgs) != groups {
				return t.errorf("%d row groups, then %d", groups, len(rgs))
			}
			var b B
			for {
				k := int(next.Add(1) - 1)
				if k >= groups {
					return nil
				}
				rg := &rowGroup{path: t.path, leaves: t.leaves, first: t.firstRow[k], rows: t.firstRow[k+1] - t.firstRow[k],
					chunks: rgs[k].ColumnChunks()}
				if int64(rg.rows) != rgs[k].NumRows() {
					return t.errorf("row group %d has %d rows, then %d", k, rg.rows, rgs[k].NumRows())
				}
				if err := t.decode(rg, &b); err != nil {
					return err
				}
				if err := fn(&b); err != nil {
					return err
				}
			}
		})
	}
	return g.Wait()
}

// grow returns s with length n, reusing its array when it is big enough.
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// rowGroup is one row group being decoded.
type rowGroup struct {
	path   string
	leaves map[string]leaf
	first  int
	rows   int
	chunks []parquet.ColumnChunk
}

func (rg *rowGroup) errorf(col string, format string, args ...any) error {
	return fmt.Errorf("%s: %w: column %s, rows from %d: %s", rg.path, snapshot.ErrNotParquet, col, rg.first,
		fmt.Sprintf(format, args...))
}

// pages calls fn with each page of column col and the row of the row
// group it starts at, checking that the pages cover the row group's rows
// exactly.
func (rg *rowGroup) pages(col string, fn func(p parquet.Page, at int, maxDef byte) error) error {
	l, ok := rg.leaves[col]
	if !ok || l.index >= len(rg.chunks) {
		return rg.errorf(col, "no such column in the row group")
	}
	pages := rg.chunks[l.index].Pages()
	defer pages.Close()
	at := 0
	for {
		p, err := pages.ReadPage()
		if errors.Is(err, io.EOF) {
			if at != rg.rows {
				return rg.errorf(col, "%d values for %d rows", at, rg.rows)
			}
			return nil
		}
		if err != nil {
			return rg.errorf(col, "%v", err)
		}
		n := int(p.NumRows())
		if n < 0 || n > rg.rows-at {
			parquet.Release(p)
			return rg.errorf(col, "a page of %d rows at row %d of %d", n, at, rg.rows)
		}
		err = fn(p, at, l.maxDef)
		parquet.Release(p)
		if err != nil {
			return rg.errorf(col, "page at row %d: %v", at, err)
		}
		at += n
	}
}

var errValueCount = errors.New("the page's values do not match its rows")

// pageValues is a page's non-null values: the page's own (valid until
// the page is released) or, for a dictionary-encoded page, its
// dictionary's, looked up into buf.
func pageValues[T any](p parquet.Page, kind encoding.Kind, get func(*encoding.Values) []T, buf *[]T) ([]T, error) {
	data := p.Data()
	dict := p.Dictionary()
	if dict == nil {
		if data.Kind() != kind {
			return nil, fmt.Errorf("a page of %v values", data.Kind())
		}
		return get(&data), nil
	}
	dv := dict.Page().Data()
	if data.Kind() != encoding.Int32 || dv.Kind() != kind {
		return nil, fmt.Errorf("a dictionary page of %v values", data.Kind())
	}
	vals := get(&dv)
	out := (*buf)[:0]
	for _, i := range data.Int32() {
		if uint(i) >= uint(len(vals)) {
			return nil, fmt.Errorf("dictionary index %d of %d", i, len(vals))
		}
		out = append(out, vals[i])
	}
	*buf = out
	return out, nil
}

// spread writes a page's non-null values into dst (one entry a row),
// null where the definition levels say a row has none.
func spread[T any](dst, vals []T, defs []byte, maxDef byte, null T) error {
	if maxDef == 0 || len(defs) == 0 {
		if len(vals) != len(dst) {
			return errValueCount
		}
		copy(dst, vals)
		return nil
	}
	if len(defs) != len(dst) {
		return errValueCount
	}
	k := 0
	for i, d := range defs {
		if d != maxDef {
			dst[i] = null
			continue
		}
		if k == len(vals) {
			return errValueCount
		}
		dst[i] = vals[k]
		k++
	}
	if k != len(vals) {
		return errValueCount
	}
	return nil
}

// fixed reads a column of fixed-size values into dst (len rg.rows).
func fixed[T any](rg *rowGroup, col string, dst []T, null T, kind encoding.Kind, get func(*encoding.Values) []T) error {
	var buf []T
	return rg.pages(col, func(p parquet.Page, at int, maxDef byte) error {
		n := int(p.NumRows())
		vals, err := pageValues(p, kind, get, &buf)
		if err != nil {
			return err
		}
		return spread(dst[at:at+n], vals, p.DefinitionLevels(), maxDef, null)
	})
}

func (rg *rowGroup) int32s(col string, dst []int32, null int32) error {
	return fixed(rg, col, dst, null, encoding.Int32, (*encoding.Values).Int32)
}

func (rg *rowGroup) int64s(col string, dst []int64, null int64) error {
	return fixed(rg, col, dst, null, encoding.Int64, (*encoding.Values).Int64)
}

func (rg *rowGroup) float64s(col string, dst []float64, null float64) error {
	return fixed(rg, col, dst, null, encoding.Double, (*encoding.Values).Double)
}

// micros reads a timestamp column as Unix microseconds.
func (rg *rowGroup) micros(col string, dst []int64, null int64) error {
	if err := rg.int64s(col, dst, null); err != nil {
		return err
	}
	const us = int64(1000)
	switch unit := rg.leaves[col].unit; {
	case unit == us:
	case unit > us: // milliseconds
		for i, v := range dst {
			if v != null {
				dst[i] = v * (unit / us)
			}
		}
	default: // nanoseconds: floored, as time.Time.UnixMicro does
		for i, v := range dst {
			if v != null {
				q := v / (us / unit)
				if v%(us/unit) < 0 {
					q--
				}
				dst[i] = q
			}
		}
	}
	return nil
}

// bools reads a boolean column as boolNull, boolFalse or boolTrue.
func (rg *rowGroup) bools(col string, dst []uint8) error {
	var vals []uint8
	return rg.pages(col, func(p parquet.Page, at int, maxDef byte) error {
		n := int(p.NumRows())
		data := p.Data()
		if p.Dictionary() != nil || data.Kind() != encoding.Boolean {
			return fmt.Errorf("a page of %v values", data.Kind())
		}
		bits := data.Boolean() // packed, least significant bit first
		present := n
		if defs := p.DefinitionLevels(); maxDef > 0 && len(defs) > 0 {
			present = 0
			for _, d := range defs {
				if d == maxDef {
					present++
				}
			}
		}
		if len(bits)*8 < present {
			return errValueCount
		}
		vals = grow(vals, present)
		for i := range vals {
			vals[i] = boolFalse + (bits[i>>3]>>(i&7))&1
		}
		return spread(dst[at:at+n], vals, p.DefinitionLevels(), maxDef, boolNull)
	})
}

// byteArrays is a byte array column of a row group: value i is
// data[off[i]:off[i+1]], a null one empty (and noted in nulls).
type byteArrays struct {
	data  []byte
	off   []uint32
	nulls []bool
}

// str is value i as a string sharing the batch's memory: valid until the
// batch is reused (strings.Clone what you keep).
func (b *byteArrays) str(i int) string {
	lo, hi := b.off[i], b.off[i+1]
	if lo == hi {
		return ""
	}
	return unsafe.String(&b.data[lo], int(hi-lo))
}

func (rg *rowGroup) byteArrays(col string, dst *byteArrays) error {
	dst.data, dst.off, dst.nulls = dst.data[:0], append(slices.Grow(dst.off[:0], rg.rows+1), 0), grow(dst.nulls, rg.rows)
	err := rg.pages(col, func(p parquet.Page, at int, maxDef byte) error {
		n := int(p.NumRows())
		var vals []byte
		var offs, idx []uint32
		data := p.Data()
		if dict := p.Dictionary(); dict != nil {
			dv := dict.Page().Data()
			if data.Kind() != encoding.Int32 || dv.Kind() != encoding.ByteArray {
				return fmt.Errorf("a dictionary page of %v values", data.Kind())
			}
			vals, offs = dv.ByteArray()
			for _, i := range data.Int32() {
				idx = append(idx, uint32(i))
			}
		} else {
			if data.Kind() != encoding.ByteArray {
				return fmt.Errorf("a page of %v values", data.Kind())
			}
			vals, offs = data.ByteArray()
		}
		if len(offs) == 0 {
			offs = []uint32{0}
		}
		for k := 1; k < len(offs); k++ {
			if offs[k] < offs[k-1] || int(offs[k]) > len(vals) {
				return errors.New("value offsets out of order or bounds")
			}
		}
		values := len(offs) - 1
		if idx != nil {
			values = len(idx)
		} else {
			dst.data = slices.Grow(dst.data, int(offs[len(offs)-1]-offs[0]))
		}
		defs := p.DefinitionLevels()
		if maxDef == 0 || len(defs) == 0 {
			defs = nil
			if values != n {
				return errValueCount
			}
		} else if len(defs) != n {
			return errValueCount
		}
		k := 0
		for i := range n {
			null := defs != nil && defs[i] != maxDef
			dst.nulls[at+i] = null
			if !null {
				if k == values {
					return errValueCount
				}
				v := k
				if idx != nil {
					if int(idx[k]) >= len(offs)-1 {
						return fmt.Errorf("dictionary index %d of %d", idx[k], len(offs)-1)
					}
					v = int(idx[k])
				}
				dst.data = append(dst.data, vals[offs[v]:offs[v+1]]...)
				k++
			}
			if len(dst.data) > math.MaxUint32 {
				return errors.New("more than 4 GiB of values in a row group")
			}
			dst.off = append(dst.off, uint32(len(dst.data)))
		}
		if k != values {
			return errValueCount
		}
		return nil
	})
	if err == nil && len(dst.off) != rg.rows+1 {
		err = rg.errorf(col, "%d values for %d rows", len(dst.off)-1, rg.rows)
	}
	return err
}
