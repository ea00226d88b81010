package rebuild

import (
	"context"
	"fmt"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/layout"
)

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
// It reads the three columns it needs page by page
// (snapshot.Files.MapPositions) rather than every row: on a million
// domains that took seconds, the better part of the layout stage's time
// budget.
func (b *builder) loadPrevPositions(top []uint32) (map[uint32][2]float64, uint64, error) {
	if b.prev == nil {
		return nil, 0, nil
	}
	want := make(map[string]uint32, len(top))
	for _, v := range top {
		want[b.names[v]] = v
	}
	prev := make(map[uint32][2]float64, len(top))
	text, ok, err := b.prev.MapPositions(func(name []byte) int64 {
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
		return prev, 0, fmt.Errorf("%s: %w", b.prev.Location(data.DomainsFile), err)
	}
	return prev, print, nil
}
