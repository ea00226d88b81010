package rebuild

import (
	"context"
	"time"

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
// another store matches nothing. Only the three columns are read
// (snapshot.Files.Communities).
func (b *builder) loadPrevCommunities() ([]int32, error) {
	if b.prev == nil {
		return nil, nil
	}
	prev := make([]int32, len(b.names))
	for i := range prev {
		prev[i] = -1
	}
	ok, err := b.prev.Communities(func(id int32, name []byte) int32 {
		d, ok := b.denseOf(uint32(id))
		if !ok || string(name) != b.names[d] {
			return -1 // gone from the store, or another domain under this id: not the same store
		}
		return d
	}, func(d, community int32) { prev[d] = community })
	if err != nil || !ok {
		return nil, err
	}
	return prev, nil
}
