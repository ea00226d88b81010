package rebuild

import (
	"context"
	"fmt"
	"math"
	"os"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/rank/layout"
)

// mapFingerprintKey names the key-value metadata entry of domains.parquet
// that holds the fingerprint of the map layout's input (a footer entry, not
// a column: the file's schema is unchanged). The next rebuild compares it
// with its own to keep an unchanged map exactly as it was.
const mapFingerprintKey = "mapthenet.map.fingerprint"

// computeLayout places the ranked domains on the map (package
// rank/layout): the best Options.MapTop by force layout over the followed
// graph taken as undirected, warm-started from the previous snapshot's
// map_x/map_y by domain name, the other ranked domains beside their
// placed neighbours. It releases the graph, which only the layout needed
// after ranking.
func (b *builder) computeLayout(ctx context.Context, _ Source) (int64, error) {
	defer func() { b.graph, b.order = nil, nil }()
	if b.opts.MapTop < 0 || b.graph == nil || len(b.order) == 0 {
		return 0, nil
	}
	top := b.order[:min(len(b.order), b.opts.MapTop)]
	prev, print, err := b.loadPrevPositions(top)
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
	if len(prev) > 0 {
		in.Prev = func(v uint32) (float64, float64, bool) {
			p, ok := prev[v]
			return p[0], p[1], ok
		}
	}
	x, y, st, err := layout.Map(ctx, in, b.opts.Layout)
	if err != nil {
		return 0, err
	}
	b.mapX, b.mapY = x, y
	b.mapPrint = layout.FormatFingerprint(st.Fingerprint)
	b.log.Info("map laid out", "by_layout", st.ByLayout, "by_neighbours", st.ByNeighbours, "unplaced", st.Unplaced,
		"edges", st.Edges, "warm", st.Warm, "from_previous", st.Known, "unchanged", st.Reused, "iterations", st.Iterations)
	return int64(st.ByLayout + st.ByNeighbours), nil
}

// prevMapRow reads just the map columns of an earlier domains.parquet.
type prevMapRow struct {
	Domain string   `parquet:"domain"`
	MapX   *float64 `parquet:"map_x,optional"`
	MapY   *float64 `parquet:"map_y,optional"`
}

// loadPrevPositions returns the previous snapshot's position of each of
// the given domains (dense indices) that had one, and the fingerprint of
// the previous layout (0 when none). Only these domains are looked up, so
// memory follows the layout's size, not the snapshot's.
func (b *builder) loadPrevPositions(top []uint32) (map[uint32][2]float64, uint64, error) {
	if b.prevDomains == "" {
		return nil, 0, nil
	}
	want := make(map[string]uint32, len(top))
	for _, v := range top {
		want[b.names[v]] = v
	}
	prev := make(map[uint32][2]float64, len(top))
	err := readParquet(b.prevDomains, func(rows []prevMapRow) error {
		for _, r := range rows {
			if r.MapX == nil || r.MapY == nil || math.IsNaN(*r.MapX) || math.IsNaN(*r.MapY) ||
				math.IsInf(*r.MapX, 0) || math.IsInf(*r.MapY, 0) {
				continue
			}
			if v, ok := want[r.Domain]; ok {
				prev[v] = [2]float64{*r.MapX, *r.MapY}
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	text, ok, err := parquetMetadata(b.prevDomains, mapFingerprintKey)
	if err != nil || !ok {
		return prev, 0, err
	}
	print, err := layout.ParseFingerprint(text)
	if err != nil {
		return prev, 0, fmt.Errorf("%s: %w", b.prevDomains, err)
	}
	return prev, print, nil
}

// domainsMetadata is the key-value metadata domains.parquet carries.
func (b *builder) domainsMetadata() []parquet.WriterOption {
	if b.mapPrint == "" {
		return nil
	}
	return []parquet.WriterOption{parquet.KeyValueMetadata(mapFingerprintKey, b.mapPrint)}
}

// parquetMetadata reads one key-value metadata entry of a Parquet file.
func parquetMetadata(path, key string) (value string, ok bool, err error) {
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
	value, ok = pf.Lookup(key)
	return value, ok, nil
}
