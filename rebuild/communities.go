package rebuild

import (
	"context"
	"slices"
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
// Rows are matched by domain name: ids are positions in name order, so the
// same domain has another id in the next snapshot once a name before it
// comes or goes. Only the three columns are read
// (snapshot.Files.Communities).
func (b *builder) loadPrevCommunities() ([]int32, error) {
	if b.prev == nil {
		return nil, nil
	}
	prev := make([]int32, len(b.names))
	for i := range prev {
		prev[i] = -1
	}
	find := newNameFinder(b.names)
	ok, err := b.prev.Communities(func(_ int32, name []byte) int32 {
		return find.index(name) // -1: gone from the store
	}, func(d, community int32) { prev[d] = community })
	if err != nil || !ok {
		return nil, err
	}
	return prev, nil
}

// nameFinder finds a name's dense index. The names of a merge (every
// rebuild of a store) are in name order, so a lookup is a search from the
// last name found, forward first: a previous snapshot's rows come in name
// order too, which makes each lookup a step or two. Names in another order
// (a test's source) get a map.
type nameFinder struct {
	names []string
	byMap map[string]int32
	last  int
}

func newNameFinder(names []string) *nameFinder {
	f := &nameFinder{names: names}
	if !slices.IsSorted(names) {
		f.byMap = make(map[string]int32, len(names))
		for i, n := range names {
			f.byMap[n] = int32(i)
		}
	}
	return f
}

// index is name's dense index, or -1.
func (f *nameFinder) index(name []byte) int32 {
	if f.byMap != nil {
		if i, ok := f.byMap[string(name)]; ok {
			return i
		}
		return -1
	}
	lo, hi := 0, len(f.names)
	if f.last < len(f.names) && f.names[f.last] <= string(name) {
		// Gallop forward from the last hit.
		lo = f.last
		step := 1
		for lo+step < len(f.names) && f.names[lo+step] <= string(name) {
			lo += step
			step *= 2
		}
		hi = min(lo+step+1, len(f.names))
	}
	i, found := slices.BinarySearch(f.names[lo:hi], string(name))
	if !found {
		return -1
	}
	f.last = lo + i
	return int32(f.last)
}
