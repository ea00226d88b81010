package edgefile

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/internal/atomicfile"
	"github.com/mapthenet/mapthenet/internal/parallel"
)

// writePartRows is the rows of one part of the rank file, encoded on its
// own and written as one row group. Fixed, not derived from the workers,
// so that the file is the same for any workers.
const writePartRows = 1 << 18

func rankWriterOptions() []parquet.WriterOption {
	return []parquet.WriterOption{
		parquet.Compression(&zstd.Codec{Level: zstd.SpeedFastest}),
		parquet.MaxRowsPerRowGroup(writePartRows),
	}
}

// Ranked is what WriteRanks writes: node v is the domain Names[v] (or id v
// when Names is nil), of
// score Scores[v], linked from InDomains(v) distinct domains (0: unranked)
// and linking to OutDomains[v]; Order lists the ranked nodes, best first.
type Ranked struct {
	Names      *Names
	Scores     []float64
	InDomains  func(v uint32) uint32
	OutDomains []uint32
	Order      []uint32
}

// WriteRanks writes the rank rows: ranked nodes in order, then unranked
// nodes by name. It writes a temporary file beside outPath and renames it
// into place. With Names nil the nodes are ids: it writes data.RankIDRow,
// the unranked by id.
//
// Encoding and compressing the rows was most of the time of writing, on
// one core: the parts are encoded in memory on up to workers goroutines
// at a time, each a Parquet file of one row group, whose column chunks
// parquet-go then copies into the output as they are (WriteRowGroup does
// not decode them again when the schema and options match).
func WriteRanks(outPath string, t Ranked, workers int) error {
	names, order := t.Names, t.Order
	// Row i of the file is node rows[i]; the ranked ones come first, then
	// the others by name (or id).
	n := uint32(len(t.Scores))
	rows := makeLarge[uint32](0, int(n))
	rows = append(rows, order...)
	for v := range n {
		if t.InDomains(v) == 0 {
			rows = append(rows, v)
		}
	}
	ranked := len(order)
	rank := func(i int) int64 {
		if i < ranked {
			return int64(i + 1)
		}
		return 0
	}
	if names == nil {
		return writeRankFile(outPath, rows, workers, func(out []data.RankIDRow, first int, vs []uint32, c *rankColumns) {
			c.gather(t, vs)
			for j, v := range vs {
				out[j] = data.RankIDRow{ID: int64(v), Rank: rank(first + j), Score: c.score[j], InDomains: c.in[j], OutDomains: c.out[j]}
			}
		})
	}
	sortByName(rows[ranked:], names, workers)
	return writeRankFile(outPath, rows, workers, func(out []data.RankRow, first int, vs []uint32, c *rankColumns) {
		c.gather(t, vs)
		for j, v := range vs {
			out[j] = data.RankRow{Domain: names.Name(v), Rank: rank(first + j), Score: c.score[j], InDomains: c.in[j], OutDomains: c.out[j]}
		}
	})
}

// A rowFiller fills out[j] with the row of node vs[j], row first+j of the
// file, gathering the nodes' columns into c (its own scratch) first.
type rowFiller[T any] func(out []T, first int, vs []uint32, c *rankColumns)

// rankColumns are the score, in-domains and out-domains of a batch of
// nodes.
type rankColumns struct {
	score   []float64
	in, out []int64
}

// gather fills c with the columns of nodes vs. Rows in rank order visit
// the nodes at random, so each column is gathered in a loop of its own:
// the loads of a tight loop overlap their cache misses, where one loop
// building whole rows waited on each in turn.
func (c *rankColumns) gather(t Ranked, vs []uint32) {
	n := len(vs)
	if cap(c.score) < n {
		c.score, c.in, c.out = make([]float64, n), make([]int64, n), make([]int64, n)
	}
	c.score, c.in, c.out = c.score[:n], c.in[:n], c.out[:n]
	for j, v := range vs {
		c.score[j] = t.Scores[v]
	}
	for j, v := range vs {
		c.out[j] = int64(t.OutDomains[v])
	}
	for j, v := range vs {
		c.in[j] = int64(t.InDomains(v))
	}
}

// sortByName sorts ids by their names (distinct: no two ids share one).
// It was a single-threaded comparison sort that took 5 CPU-seconds for the
// 2.3 million unranked names of graphgen's L graph. Now the ids are first
// sorted by the first 8 bytes of their names, as big-endian integers, with
// a radix sort (the names themselves are read once, not at every
// comparison), in two halves at once when there are many (sortKeyed's
// way: the result does not depend on the cores); only runs of equal
// prefixes are then compared whole.
func sortByName(ids []uint32, names *Names, workers int) {
	if len(ids) < 2 {
		return
	}
	items := makeLarge[prefixed](len(ids), len(ids))
	for i, id := range ids {
		items[i] = prefixed{namePrefix(names.Name(id)), id}
	}
	items = sortPrefixed(items, workers)
	for i := 0; i < len(items); {
		j := i + 1
		for j < len(items) && items[j].key == items[i].key {
			j++
		}
		if j-i > 1 {
			slices.SortFunc(items[i:j], func(a, b prefixed) int { return strings.Compare(names.Name(a.id), names.Name(b.id)) })
		}
		i = j
	}
	for i, it := range items {
		ids[i] = it.id
	}
}

// prefixed is an id and the first 8 bytes of its name.
type prefixed struct {
	key uint64
	id  uint32
}

// namePrefix is the first 8 bytes of s as a big-endian integer (zeros
// after a shorter name): names in byte order have keys in order.
func namePrefix(s string) uint64 {
	var k uint64
	for i := range 8 {
		k <<= 8
		if i < len(s) {
			k |= uint64(s[i])
		}
	}
	return k
}

// sortPrefixed sorts a by key, stably (equal keys by id order in a), and
// returns the sorted items (in a or a new slice): an LSD radix sort on
// bytes, in two halves at once merged when a is big.
func sortPrefixed(a []prefixed, workers int) []prefixed {
	buf := makeLarge[prefixed](len(a), len(a))
	if workers < 2 || len(a) < 1<<16 {
		return radixPrefixed(a, buf)
	}
	half := len(a) / 2
	var x, y []prefixed
	parallel.Run(2, func(k int) {
		if k == 0 {
			x = radixPrefixed(a[:half], buf[:half])
		} else {
			y = radixPrefixed(a[half:], buf[half:])
		}
	})
	out := make([]prefixed, len(a))
	i, j, o := 0, 0, 0
	for i < len(x) && j < len(y) {
		if y[j].key < x[i].key {
			out[o] = y[j]
			j++
		} else {
			out[o] = x[i]
			i++
		}
		o++
	}
	o += copy(out[o:], x[i:])
	copy(out[o:], y[j:])
	return out
}

// radixPrefixed is LSD radix sort on bytes of the keys, skipping bytes
// every key shares; it returns whichever of a and buf holds the result.
func radixPrefixed(a, buf []prefixed) []prefixed {
	if len(a) == 0 {
		return a
	}
	for shift := uint(0); shift < 64; shift += 8 {
		var count [256]int
		for _, it := range a {
			count[byte(it.key>>shift)]++
		}
		if count[byte(a[0].key>>shift)] == len(a) {
			continue
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, it := range a {
			b := byte(it.key >> shift)
			buf[count[b]] = it
			count[b]++
		}
		a, buf = buf, a
	}
	return a
}

// writeRankFile writes the rows fill makes of rows (row i of node rows[i])
// to outPath.
// The file is written atomically (atomicfile.Write, 0644).
func writeRankFile[T any](outPath string, rows []uint32, workers int, fill rowFiller[T]) error {
	err := atomicfile.Write(outPath, 0o644, func(tmp *os.File) error {
		return fillRankFile(tmp, rows, workers, fill)
	})
	if err != nil {
		return fmt.Errorf("rank: writing %s: %w", outPath, err)
	}
	return nil
}

// fillRankFile encodes the parts on up to workers goroutines and copies
// them into the file in order as they come: the copy of one part overlaps
// the encoding of the next ones (at most workers+1 parts are held
// encoded and not yet written).
func fillRankFile[T any](tmp *os.File, rows []uint32, workers int, fill rowFiller[T]) error {
	w := parquet.NewGenericWriter[T](tmp, rankWriterOptions()...)
	nparts := (len(rows) + writePartRows - 1) / writePartRows
	// A part's buffer starts as big as the biggest part so far: grown by
	// doubling, each part was copied about twice over (a third of the
	// write stage's CPU at L was memmove).
	var biggest atomic.Int64
	// Encoders are reused part after part: a new one's column buffers
	// were fresh memory for every part.
	idle := make(chan *partEncoder[T], workers+1)
	err := parallel.Ordered(nparts, workers, workers+1, func(i int) ([]byte, error) {
		var e *partEncoder[T]
		select {
		case e = <-idle:
		default:
			e = &partEncoder[T]{fill: fill}
		}
		lo := i * writePartRows
		part, err := e.encode(rows, lo, min(len(rows), lo+writePartRows), int(biggest.Load()))
		idle <- e // never blocks: at most workers+1 encoders exist
		if n := int64(len(part)); n > biggest.Load() {
			biggest.Store(n) // a race between two parts only costs a growth
		}
		return part, err
	}, func(_ int, part []byte) error {
		f, err := parquet.OpenFile(bytes.NewReader(part), int64(len(part)))
		if err != nil {
			return err
		}
		for _, rg := range f.RowGroups() {
			if _, err := w.WriteRowGroup(rg); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.Close()
}

// A partEncoder encodes parts of the rank file, one at a time.
type partEncoder[T any] struct {
	fill rowFiller[T]
	w    *parquet.GenericWriter[T]
	out  []T
	c    rankColumns
}

// encode encodes rows lo..hi-1 of the rank file as a Parquet file in
// memory, in a buffer of sizeHint bytes and an eighth to begin with.
func (e *partEncoder[T]) encode(rows []uint32, lo, hi, sizeHint int) ([]byte, error) {
	var buf bytes.Buffer
	buf.Grow(sizeHint + sizeHint/8)
	if e.w == nil {
		e.w = parquet.NewGenericWriter[T](&buf, rankWriterOptions()...)
		e.out = make([]T, 8192)
	} else {
		e.w.Reset(&buf)
	}
	for i := lo; i < hi; i += len(e.out) {
		n := min(len(e.out), hi-i)
		e.fill(e.out[:n], i, rows[i:i+n], &e.c)
		if _, err := e.w.Write(e.out[:n]); err != nil {
			return nil, err
		}
	}
	if err := e.w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
