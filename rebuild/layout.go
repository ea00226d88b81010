package rebuild

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/layout"
)

// mapFingerprintKey names the key-value metadata entry of domains.parquet
// that holds the fingerprint of the map layout's input (a footer entry, not
// a column: the file's schema is unchanged). The next rebuild compares it
// with its own to keep an unchanged map exactly as it was.
const mapFingerprintKey = "mapthenet.map.fingerprint"

// computeLayout places the ranked domains on the map (package
// layout): the best Options.MapTop by force layout over the followed
// graph taken as undirected, each community a region of its own,
// warm-started from the previous snapshot's map_x/map_y by domain name,
// the other ranked domains beside their placed neighbours. It releases the graph, which only the layout needed
// after ranking.
func (b *builder) computeLayout(ctx context.Context, _ Source) (int64, error) {
	defer func() { b.graph, b.order = nil, nil }()
	if b.opts.MapTop < 0 || b.graph == nil || len(b.order) == 0 {
		return 0, nil
	}
	top := b.order[:min(len(b.order), b.opts.MapTop)]
	started := time.Now()
	prev, print, err := b.loadPrevPositions(top)
	loaded := time.Since(started)
	if err != nil {
		// An unreadable previous snapshot must not stop new ones.
		b.log.Warn("previous map positions unavailable: the layout starts afresh", "err", err)
		prev, print = nil, 0
	}
	in := layout.MapInput{
		Graph:           b.graph,
		Order:           b.order,
		Top:             b.opts.MapTop,
		Key:             func(v uint32) uint64 { return layout.Key(b.names[v]) },
		PrevFingerprint: print,
	}
	if b.community != nil {
		// Each community a region of its own (the communities stage ran
		// first; its ids are stable, so the fingerprint is too).
		in.Community = func(v uint32) int32 { return b.community[v] }
	}
	if len(prev) > 0 {
		in.Prev = func(v uint32) (float64, float64, bool) {
			p, ok := prev[v]
			return p[0], p[1], ok
		}
	}
	started = time.Now()
	x, y, st, err := layout.Map(ctx, in, b.opts.Layout)
	if err != nil {
		return 0, err
	}
	mapped := time.Since(started)
	b.mapX, b.mapY = x, y
	b.mapPrint = layout.FormatFingerprint(st.Fingerprint)
	b.log.Info("map laid out", "by_layout", st.ByLayout, "by_neighbours", st.ByNeighbours, "unplaced", st.Unplaced,
		"edges", st.Edges, "warm", st.Warm, "from_previous", st.Known, "unchanged", st.Reused,
		"iterations", st.Iterations, "levels", st.Levels, "work", st.Work,
		"previous_seconds", loaded.Seconds(), "layout_seconds", mapped.Seconds())
	return int64(st.ByLayout + st.ByNeighbours), nil
}

// loadPrevPositions returns the previous snapshot's position of each of
// the given domains (dense indices) that had one, and the fingerprint of
// the previous layout (0 when none). Only these domains are kept, so
// memory follows the layout's size, not the snapshot's.
//
// It reads the three columns it needs page by page rather than through
// parquet-go's row reader, which builds and converts every row: on a
// million domains that took seconds, the better part of the layout
// stage's time budget.
func (b *builder) loadPrevPositions(top []uint32) (map[uint32][2]float64, uint64, error) {
	if b.prevDomains == "" {
		return nil, 0, nil
	}
	want := make(map[string]uint32, len(top))
	for _, v := range top {
		want[b.names[v]] = v
	}
	prev := make(map[uint32][2]float64, len(top))
	text, ok, err := readPrevMap(b.prevDomains, func(name []byte) int64 {
		if v, ok := want[string(name)]; ok {
			return int64(v)
		}
		return -1
	}, func(v int64, x, y float64) {
		prev[uint32(v)] = [2]float64{x, y}
	})
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return prev, 0, nil
	}
	print, err := layout.ParseFingerprint(text)
	if err != nil {
		return prev, 0, fmt.Errorf("%s: %w", b.prevDomains, err)
	}
	return prev, print, nil
}

// readPrevMap reads the domain, map_x and map_y columns of a
// domains.parquet: for each row whose domain lookup maps to an index >= 0
// and whose position is finite, it calls found(index, x, y). It returns
// the file's map fingerprint entry (ok false when it has none).
func readPrevMap(path string, lookup func(name []byte) int64, found func(v int64, x, y float64)) (print string, ok bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", path, ErrNotParquet, r)
		}
	}()
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return "", false, fmt.Errorf("%s: %w: %v", path, ErrNotParquet, err)
	}
	var cols [3]int
	for i, c := range []struct {
		name string
		kind parquet.Kind
	}{{"domain", parquet.ByteArray}, {"map_x", parquet.Double}, {"map_y", parquet.Double}} {
		leaf, ok := pf.Schema().Lookup(c.name)
		if !ok || leaf.MaxRepetitionLevel != 0 || leaf.Node.Type().Kind() != c.kind {
			return "", false, fmt.Errorf("%s: %w: no %s column of %v values", path, ErrNotParquet, c.name, c.kind)
		}
		cols[i] = leaf.ColumnIndex
	}
	var index []int64
	var xs []float64
	for _, rg := range pf.RowGroups() {
		rows := rg.NumRows()
		chunks := rg.ColumnChunks()
		index = index[:0]
		err := columnValues(chunks[cols[0]], func(v parquet.Value) {
			i := int64(-1)
			if !v.IsNull() {
				i = lookup(v.ByteArray())
			}
			index = append(index, i)
		})
		if err == nil && int64(len(index)) != rows {
			err = fmt.Errorf("%d domains in a row group of %d rows", len(index), rows)
		}
		if err != nil {
			return "", false, fmt.Errorf("%s: %w: %v", path, ErrNotParquet, err)
		}
		xs = xs[:0]
		err = columnValues(chunks[cols[1]], func(v parquet.Value) {
			x := math.NaN()
			if !v.IsNull() {
				x = v.Double()
			}
			xs = append(xs, x)
		})
		if err == nil && int64(len(xs)) != rows {
			err = fmt.Errorf("%d map_x values in a row group of %d rows", len(xs), rows)
		}
		if err != nil {
			return "", false, fmt.Errorf("%s: %w: %v", path, ErrNotParquet, err)
		}
		r := 0
		err = columnValues(chunks[cols[2]], func(v parquet.Value) {
			if r < len(xs) && index[r] >= 0 && !v.IsNull() {
				x, y := xs[r], v.Double()
				if !math.IsNaN(x) && !math.IsInf(x, 0) && !math.IsNaN(y) && !math.IsInf(y, 0) {
					found(index[r], x, y)
				}
			}
			r++
		})
		if err == nil && int64(r) != rows {
			err = fmt.Errorf("%d map_y values in a row group of %d rows", r, rows)
		}
		if err != nil {
			return "", false, fmt.Errorf("%s: %w: %v", path, ErrNotParquet, err)
		}
	}
	print, ok = pf.Lookup(mapFingerprintKey)
	return print, ok, nil
}

// columnValues calls fn with every value of a column chunk, in order. A
// value's bytes are only valid during the call.
func columnValues(cc parquet.ColumnChunk, fn func(parquet.Value)) error {
	pages := cc.Pages()
	defer pages.Close()
	buf := make([]parquet.Value, 1024)
	for {
		page, err := pages.ReadPage()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		values := page.Values()
		for {
			n, err := values.ReadValues(buf)
			for _, v := range buf[:n] {
				fn(v)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(page)
				return err
			}
		}
		parquet.Release(page)
	}
}

// domainsMetadata is the key-value metadata domains.parquet carries.
func (b *builder) domainsMetadata() []parquet.WriterOption {
	if b.mapPrint == "" {
		return nil
	}
	return []parquet.WriterOption{parquet.KeyValueMetadata(mapFingerprintKey, b.mapPrint)}
}
