package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// Writer streams rows of one type into one Parquet file, zstd
// compressed, and makes the file durable on Close.
//
// Encoding and compressing rows is most of a rebuild's cost (edges.parquet:
// 10 million rows for the M graph, zstd per page), so the row groups are
// encoded in parallel: row group k is written by encoder k mod workers into
// a Parquet file in memory, and a committer appends the finished row groups
// to the real file in order, through parquet-go's verbatim copy of column
// chunks (WriteRowGroup of a file's row group with the same schema and
// options moves the compressed pages, statistics and page index as they
// are). The file is the one a single writer would make: the same row
// groups, pages, encodings and statistics.
//
// The caller (the producer, on its own goroutine) fills batches of rows
// while the encoders encode: on two cores, the store's scan and the
// Parquet encoding run at once. Memory holds a few batches (a row group's
// more with a second encoder, see encodeWorkers) and, per encoder, one
// encoded row group: it does not grow with the file.
type Writer[T any] struct {
	path         string
	f            *os.File
	out          *parquet.GenericWriter[T]
	opts         []parquet.WriterOption
	rowGroupRows int64

	batch   []T   // being filled by the producer
	inGroup int64 // rows sent to the current row group's encoder
	group   int   // index of the current row group
	rows    int64 // rows written

	prepare func([]T) // when set, run by the encoders on each batch first

	free     chan []T // empty batches, to bound memory
	unmade   int      // batches not made yet (made when first needed)
	encoders []*rowGroupEncoder[T]
	wg       sync.WaitGroup // encoders and committer
	commit   chan error     // the committer's result
	closed   bool

	mu  sync.Mutex
	err error // the first error of an encoder or the committer
}

// Row group sizes. DuckDB scans a Parquet file in parallel by row group and
// skips whole row groups by their min/max statistics, so a row group is the
// unit of both parallelism and pruning:
//   - small files (domains, schedule, visits, link words): 122,880 rows,
//     DuckDB's own row group size, so that a scan of a few million domains
//     still splits across cores and a lookup by id or time reads one group;
//   - edges: 1,048,576 rows. The file is by far the largest and sorted by
//     (src_id, dst_id), so each group covers a narrow src_id range and prunes
//     well anyway; bigger groups compress better and keep the footer small
//     for billions of edges. The writer buffers one group (~50 MB) at most.
//
// Pages also get statistics and a column index (parquet-go's defaults), which
// DuckDB uses to skip pages within a group.
const (
	smallRowGroup = 122_880
	edgeRowGroup  = 1 << 20
)

// edgeWriterOptions are edges.parquet's writer options beyond the
// encodings its row type's tags choose (see data.EdgeRow): past 8 MiB of
// dictionary in a row group, the src column falls back to plain.
var edgeWriterOptions = []parquet.WriterOption{
	parquet.DictionaryMaxBytes(8 << 20),
}

// batchRows is how many rows go to an encoder at once: large enough that
// handing over costs nothing, small enough to be cheap to hold.
const batchRows = 8192

// zstdLevel is the compression level of every snapshot file. zstd's
// fastest level makes graphgen's M edges.parquet 2% larger than its
// default level for a fifth less CPU time (compression is a third of the
// rebuild's Parquet cost).
var zstdLevel = zstd.SpeedFastest

// encodeWorkers is how many row groups of one file are encoded at once.
// The producer (a scan of the store) takes a core of its own, so on two
// cores one encoder runs beside it: a two-stage pipeline. A second encoder
// only helps when the producer can run a whole row group ahead of the
// first, which costs a row group of buffered rows (edges.parquet: 1M rows,
// ~90 MB): worth it only where cores are to spare.
func encodeWorkers() int { return min(max(1, runtime.GOMAXPROCS(0)-1), 2) }

// writerOptions are the options of every snapshot file's writer (the real
// one and the in-memory ones must agree for row groups to be copied as
// they are).
func writerOptions(rowGroupRows int64, extra []parquet.WriterOption) []parquet.WriterOption {
	opts := []parquet.WriterOption{
		parquet.Compression(&zstd.Codec{Level: zstdLevel}),
		parquet.MaxRowsPerRowGroup(rowGroupRows),
		parquet.DataPageStatistics(true),
		parquet.CreatedBy("mapthenet", "1", ""),
	}
	return append(opts, extra...)
}

// rowGroupEncoder encodes the row groups given to it, in order, each into
// a Parquet file in memory.
type rowGroupEncoder[T any] struct {
	in  chan encodeMsg[T]
	out chan encodedGroup
}

// encodeMsg is a batch of rows of the current row group, or (end) the
// end of it.
type encodeMsg[T any] struct {
	rows []T
	end  bool
}

// encodedGroup is one finished row group: a one-row-group Parquet file.
type encodedGroup struct {
	file *parquet.File
	err  error
}

// create makes a new file at path (the umask decides its mode) and a
// Writer of it with every snapshot file's options and extra.
func create[T any](path string, rowGroupRows int64, extra ...parquet.WriterOption) (*Writer[T], error) {
	return createWorkers[T](path, rowGroupRows, encodeWorkers(), extra...)
}

func createWorkers[T any](path string, rowGroupRows int64, workers int, extra ...parquet.WriterOption) (*Writer[T], error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666) // the umask decides
	if err != nil {
		return nil, err
	}
	opts := writerOptions(rowGroupRows, extra)
	fw := &Writer[T]{
		path:         path,
		f:            f,
		out:          parquet.NewGenericWriter[T](f, opts...),
		opts:         opts,
		rowGroupRows: rowGroupRows,
		// Enough batches for each encoder to have two at hand and, beyond
		// the first encoder, for the producer to fill a whole row group
		// ahead (the encoders take row groups in turn); a batch is
		// allocated when first needed.
		free:   make(chan []T, 2*workers+2+(workers-1)*int((rowGroupRows+batchRows-1)/batchRows)),
		commit: make(chan error, 1),
	}
	fw.unmade = cap(fw.free)
	fw.batch = fw.newBatch()
	fw.encoders = make([]*rowGroupEncoder[T], workers)
	for i := range fw.encoders {
		e := &rowGroupEncoder[T]{in: make(chan encodeMsg[T], 2), out: make(chan encodedGroup, 1)}
		fw.encoders[i] = e
		fw.wg.Add(1)
		go fw.encode(e)
	}
	fw.wg.Add(1)
	go fw.commitGroups()
	return fw, nil
}

func (fw *Writer[T]) fail(err error) {
	fw.mu.Lock()
	if fw.err == nil {
		fw.err = err
	}
	fw.mu.Unlock()
}

func (fw *Writer[T]) failed() error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.err
}

// encode runs one encoder: it writes each of its row groups into a file in
// memory and hands the file to the committer. After an error it goes on
// taking batches (so that the producer never blocks) but encodes nothing.
func (fw *Writer[T]) encode(e *rowGroupEncoder[T]) {
	defer fw.wg.Done()
	defer close(e.out)
	var buf *bytes.Buffer
	var w *parquet.GenericWriter[T]
	broken := false
	for m := range e.in {
		if !broken && len(m.rows) > 0 {
			if fw.prepare != nil {
				fw.prepare(m.rows)
			}
			if buf == nil {
				// One writer for all of the encoder's row groups: Reset keeps
				// its buffers and dictionaries' tables at their grown size
				// (a new writer's dictionaries rehash as they grow, a tenth
				// of edges.parquet's encoding time).
				buf = new(bytes.Buffer)
				if w == nil {
					w = parquet.NewGenericWriter[T](buf, fw.opts...)
				} else {
					w.Reset(buf)
				}
			}
			if _, err := w.Write(m.rows); err != nil {
				broken = true
				fw.fail(err)
				e.out <- encodedGroup{err: err}
			}
		}
		if m.rows != nil {
			fw.free <- m.rows[:0]
		}
		if !m.end || broken {
			continue
		}
		g := encodedGroup{}
		if buf == nil {
			g.err = errors.New("an empty row group") // never sent: the producer ends only row groups with rows
		} else if g.err = w.Close(); g.err == nil {
			g.file, g.err = parquet.OpenFile(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
		}
		if g.err != nil {
			broken = true
			fw.fail(g.err)
		}
		e.out <- g
		buf = nil
	}
}

// commitGroups appends the encoded row groups to the file in order: row
// group k comes from encoder k mod workers, which finishes its row groups
// in order; an encoder that has closed its output has no more row groups,
// and then no encoder has.
func (fw *Writer[T]) commitGroups() {
	defer fw.wg.Done()
	var err error
	for k := 0; ; k++ {
		g, ok := <-fw.encoders[k%len(fw.encoders)].out
		if !ok {
			break
		}
		if err != nil {
			continue // drain, so that no encoder blocks
		}
		if g.err != nil {
			err = g.err
			continue
		}
		rgs := g.file.RowGroups()
		if len(rgs) != 1 {
			err = fmt.Errorf("an encoded row group came out as %d", len(rgs))
		} else if _, err = fw.out.WriteRowGroup(rgs[0]); err != nil {
			fw.fail(err)
		}
	}
	// After an error the encoders' outputs may be out of step: drain them
	// all so that none blocks.
	for _, e := range fw.encoders {
		for range e.out {
		}
	}
	fw.commit <- err
}

// Prepare has fn complete each batch of rows on the encoders' goroutines
// before they are written: work that parallelizes (such as looking up names
// by id) can be taken off the producer that way. fn must only read shared
// state. Call it before the first row.
func (fw *Writer[T]) Prepare(fn func(rows []T)) { fw.prepare = fn }

// Add appends one row.
func (fw *Writer[T]) Add(row T) error {
	fw.batch = append(fw.batch, row)
	if len(fw.batch) == cap(fw.batch) || fw.inGroup+int64(len(fw.batch)) == fw.rowGroupRows {
		return fw.send()
	}
	return nil
}

// Write appends rows.
func (fw *Writer[T]) Write(rows ...T) error {
	for _, r := range rows {
		if err := fw.Add(r); err != nil {
			return err
		}
	}
	return nil
}

// send hands the batch to the current row group's encoder, and ends the
// row group when it is full.
func (fw *Writer[T]) send() error {
	if err := fw.failed(); err != nil {
		return fmt.Errorf("%s: %w", fw.path, err)
	}
	n := int64(len(fw.batch))
	if n == 0 {
		return nil
	}
	fw.inGroup += n
	fw.rows += n
	end := fw.inGroup == fw.rowGroupRows
	fw.encoders[fw.group%len(fw.encoders)].in <- encodeMsg[T]{rows: fw.batch, end: end}
	if end {
		fw.group++
		fw.inGroup = 0
	}
	fw.batch = fw.newBatch()
	return nil
}

// newBatch takes an empty batch: a new one while fewer than the pool's
// size have been made, else one that an encoder has given back.
func (fw *Writer[T]) newBatch() []T {
	select {
	case b := <-fw.free:
		return b
	default:
	}
	if fw.unmade > 0 {
		fw.unmade--
		return make([]T, 0, batchRows)
	}
	return <-fw.free
}

// finish ends the last row group, stops the encoders and the committer,
// and returns the first error.
func (fw *Writer[T]) finish(abort bool) error {
	if fw.closed {
		return errors.New("closed twice")
	}
	fw.closed = true
	var err error
	if abort {
		err = errors.New("aborted")
	} else {
		err = fw.send()
	}
	if err == nil && fw.inGroup > 0 {
		fw.encoders[fw.group%len(fw.encoders)].in <- encodeMsg[T]{end: true}
	}
	for _, e := range fw.encoders {
		close(e.in)
	}
	cerr := <-fw.commit
	fw.wg.Wait()
	if err == nil {
		err = cerr
	}
	if err == nil {
		err = fw.failed()
	}
	return err
}

// Close finishes the file (footer, statistics), fsyncs and closes it.
func (fw *Writer[T]) Close() error {
	err := fw.finish(false)
	if err == nil {
		err = fw.out.Close()
	}
	if err == nil {
		err = fw.f.Sync()
	}
	if cerr := fw.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", fw.path, err)
	}
	return nil
}

// Rows is how many rows have been added.
func (fw *Writer[T]) Rows() int64 { return fw.rows + int64(len(fw.batch)) }

// Abort stops the writer and closes the file without caring about errors:
// the staged snapshot it is in goes away.
func (fw *Writer[T]) Abort() {
	if !fw.closed {
		fw.finish(true)
	}
	fw.f.Close()
}

// writeAll writes all rows to a new file at once.
func writeAll[T any](path string, rowGroupRows int64, rows []T) (int64, error) {
	fw, err := create[T](path, rowGroupRows)
	if err != nil {
		return 0, err
	}
	if err := fw.Write(rows...); err != nil {
		fw.Abort()
		return 0, err
	}
	err = fw.Close()
	return fw.Rows(), err
}
