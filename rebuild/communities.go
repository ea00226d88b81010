package rebuild

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/community"
)

// computeCommunities finds the communities of the followed graph (package
// community: Louvain modularity, the graph taken as undirected) and gives
// them ids stable across rebuilds: a community keeps the previous
// snapshot's id of which it holds most members (community.Stable, over
// the previous domains.parquet's community column); new ones count up
// from above the previous largest id. Domains without a followed link
// either way have none. It runs before the layout, which may use them.
func (b *builder) computeCommunities(ctx context.Context, _ Source) (int64, error) {
	if b.graph == nil {
		return 0, nil
	}
	started := time.Now()
	res, err := community.Detect(ctx, b.graph.N, b.graph.In, community.Params{Workers: b.opts.Rank.Workers})
	if err != nil {
		return 0, err
	}
	detected := time.Since(started)
	started = time.Now()
	prev, err := b.loadPrevCommunities()
	if err != nil {
		// An unreadable previous snapshot must not stop new ones.
		b.log.Warn("previous communities unavailable: community ids start afresh", "err", err)
		prev = nil
	}
	ids, next := community.Stable(res.Community, len(res.Sizes), prev, 0)
	b.community = ids
	assigned := int64(0)
	for _, s := range res.Sizes {
		assigned += int64(s)
	}
	b.log.Info("communities found", "communities", len(res.Sizes), "assigned", assigned,
		"modularity", res.Modularity, "levels", res.Levels, "sweeps", res.Sweeps, "next_id", next,
		"detect_seconds", detected.Seconds(), "previous_seconds", time.Since(started).Seconds())
	return assigned, nil
}

// loadPrevCommunities maps each dense domain to its community in the
// previous snapshot (-1: none); nil when there is no previous snapshot or
// it has no community column (one written before the column existed).
// Rows are matched by store id, and the name must agree, so a snapshot of
// another store matches nothing. It reads the three columns page by page,
// as readPrevMap does, rather than building every row.
func (b *builder) loadPrevCommunities() (_ []int32, err error) {
	if b.prevDomains == "" {
		return nil, nil
	}
	path := b.prevDomains
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", path, ErrNotParquet, r)
		}
	}()
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrNotParquet, err)
	}
	if _, ok := pf.Schema().Lookup("community"); !ok {
		return nil, nil
	}
	var cols [3]int
	for i, c := range []struct {
		name string
		kind parquet.Kind
	}{{"id", parquet.Int32}, {"domain", parquet.ByteArray}, {"community", parquet.Int32}} {
		leaf, ok := pf.Schema().Lookup(c.name)
		if !ok || leaf.MaxRepetitionLevel != 0 || leaf.Node.Type().Kind() != c.kind {
			return nil, fmt.Errorf("%s: %w: no %s column of %v values", path, ErrNotParquet, c.name, c.kind)
		}
		cols[i] = leaf.ColumnIndex
	}
	prev := make([]int32, len(b.names))
	for i := range prev {
		prev[i] = -1
	}
	var index []int32
	for _, rg := range pf.RowGroups() {
		rows := rg.NumRows()
		chunks := rg.ColumnChunks()
		index = index[:0]
		err := columnValues(chunks[cols[0]], func(v parquet.Value) {
			d, ok := int32(-1), false
			if !v.IsNull() && v.Int32() >= 0 {
				d, ok = b.denseOf(uint32(v.Int32()))
			}
			if !ok {
				d = -1
			}
			index = append(index, d)
		})
		if err == nil && int64(len(index)) != rows {
			err = fmt.Errorf("%d ids in a row group of %d rows", len(index), rows)
		}
		r := 0
		if err == nil {
			err = columnValues(chunks[cols[1]], func(v parquet.Value) {
				if r < len(index) && index[r] >= 0 && (v.IsNull() || string(v.ByteArray()) != b.names[index[r]]) {
					index[r] = -1 // another domain under this id: not the same store
				}
				r++
			})
		}
		if err == nil && int64(r) != rows {
			err = fmt.Errorf("%d domains in a row group of %d rows", r, rows)
		}
		r = 0
		if err == nil {
			err = columnValues(chunks[cols[2]], func(v parquet.Value) {
				if r < len(index) && index[r] >= 0 && !v.IsNull() && v.Int32() >= 0 {
					prev[index[r]] = v.Int32()
				}
				r++
			})
		}
		if err == nil && int64(r) != rows {
			err = fmt.Errorf("%d communities in a row group of %d rows", r, rows)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %v", path, ErrNotParquet, err)
		}
	}
	return prev, nil
}
