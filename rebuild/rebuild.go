package rebuild

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/layout"
	"github.com/mapthenet/mapthenet/rank"
	"github.com/mapthenet/mapthenet/schedule"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// DefaultKeep is how many snapshots a rebuild keeps when Options.Keep is 0.
const DefaultKeep = 10

// DefaultMapTop is how many of the best-ranked domains the map's force
// layout places when Options.MapTop is 0; the other ranked domains are
// placed beside their neighbours.
const DefaultMapTop = 200_000

// Options configure a rebuild.
type Options struct {
	DataDir string // holds the snapshots (package snapshot: rebuilds/), the rebuild lock and the parts
	// Storage is where the snapshot is published, `current` moved and old
	// snapshots pruned; nil: the data directory's rebuilds/ (snapshot.Local).
	// `rebuild --snapshots` gives a snapshot.Mirror of it and an object
	// store. Files are staged, and the lock held, in the data directory
	// either way.
	Storage snapshot.Storage
	Now     time.Time // as-of time; the snapshot id is snapshot.ID(Now)
	// The revisit policy (package schedule), the crawl's too: the tier
	// table (nil: schedule.DefaultTiers) and the discovery threshold, the
	// followed linking domains a never-visited domain needs to be
	// scheduled (0: schedule.DefaultMinInDomains; seeds need none).
	Tiers        schedule.Tiers
	MinInDomains int
	Keep         int         // snapshots to keep, the new one included; 0: DefaultKeep
	Rank         rank.Params // zero: rank.DefaultParams (Workers may be set alone)
	// MapTop is how many of the best-ranked domains the map's layout
	// places by force simulation: 0 means DefaultMapTop; negative, no map
	// (map_x and map_y left empty).
	MapTop int
	// MaxShrink is the snapshot guard (guard.go): a snapshot whose domain
	// or edge count is less than (1-MaxShrink) of the current snapshot's
	// is written but does not become current (ErrShrunk). 0 means
	// DefaultMaxShrink; negative turns the guard off (an empty snapshot
	// still never replaces a non-empty one). AcceptShrink makes any
	// snapshot current.
	MaxShrink    float64
	AcceptShrink bool
	// Layout tunes the map's layout; zero fields take
	// layout.DefaultParams' values, and Workers defaults to Rank.Workers.
	Layout layout.Params
	Logger *slog.Logger
	// ScheduleShards, when set (a fleet rebuild), also splits the schedule
	// by the shard each domain lives in by this routing: one partition per
	// shard (data.SchedulePartitionFile), listed in the manifest, for the
	// crawl nodes to pull only their shards' rows. nil: none (one
	// machine's snapshot: its files do not change).
	ScheduleShards *shard.Router
	// Progress, when set, is told the rows a stage has done now and then
	// and once when the stage ends (for a progress line on a terminal).
	Progress func(stage string, rows int64)

	// sortChunk, when positive, replaces graph.DefaultSpillChunk as the
	// chunk each shard's view is sorted by name in (tests: tiny chunks,
	// many runs).
	sortChunk int

	// failAt makes the rebuild fail when it reaches the named stage
	// (tests: a rebuild that fails midway must leave `current` alone).
	failAt string
}

// Source is what a rebuild reads: one view of the whole store, by id.
// The merge of the shards (merge.go: of their sorted views for Run, of
// their parts for RunParts) is the one the commands read: its ids are
// dense and in name order. Tests give their own.
type Source interface {
	NumDomains() uint32
	// Domains calls fn for every domain in id order.
	Domains(fn func(*data.DomainState) error) error
	// Edges calls fn for every edge in (src id, dst id) order; the
	// records' Words are not needed (LinkWords has their counts).
	Edges(fn func(*data.EdgeRecord) error) error
	// Visits calls fn for every visit-log entry in (id, start) order.
	Visits(fn func(*data.VisitLogEntry) error) error
	// LinkWords calls fn for every (target id, word) of a followed edge
	// with the number of distinct linking domains that used it, in
	// (target id, word) order.
	LinkWords(fn func(dst uint32, word string, sites int64) error) error
}

// Run rebuilds a snapshot from one view of the store, moves `current` to
// it and prunes old snapshots. It returns the new manifest. The store may
// be written (by a crawl) meanwhile: the views do not see it.
//
// Every store goes the same way, whatever its K: a view of each shard
// (taken at once), each sorted into name order (as many at once as there
// are cores; graph.NameOrder: a view larger than its chunk, a K-th of
// graph.DefaultSpillChunk (shardChunk), goes through sorted runs in a scratch directory
// of the snapshot directory, removed after, so that memory stays the id
// table and a few buffers a shard whatever the store's size; the views
// are let go then), then merged (Merge) into the snapshot, each shard's
// rows handed to the merge as ExportPart would write them but without the
// part files (localMerge). So a store of one shard and of eight give the
// same snapshot, and the same as RunParts over the parts of the same
// views.
func Run(ctx context.Context, store *shard.Store, opts Options) (*data.Manifest, error) {
	return run(ctx, opts, func(dir *snapshot.Dir, _ string) (Source, func() error, error) {
		// A table block that fails its checksum ends Badger's iterators
		// without an error: check them all before reading, so that a
		// damaged store fails the rebuild rather than thin its snapshot.
		if err := store.EnsureVerified(); err != nil {
			return nil, nil, err
		}
		views, err := store.Snapshot()
		if err != nil {
			return nil, nil, fmt.Errorf("store snapshot: %w", err)
		}
		defer views.Close()
		scratch, err := dir.Scratch("sort")
		if err != nil {
			return nil, nil, fmt.Errorf("store snapshot: %w", err)
		}
		orders := make([]*graph.NameOrder, views.Shards())
		release := func() error {
			var first error
			for _, no := range orders {
				if no != nil {
					first = cmp.Or(first, no.Close())
				}
			}
			return cmp.Or(first, os.RemoveAll(scratch))
		}
		spill := graph.Spill{Dir: scratch, ChunkBytes: cmp.Or(opts.sortChunk, shardChunk(views.Shards()))}
		err = parallel(ctx, views.Shards(), func(i int) error {
			no, err := views.Shard(i).LoadByName(spill)
			if err != nil {
				return fmt.Errorf("reading shard %d: %w", i, err)
			}
			orders[i] = no
			return nil
		})
		if err != nil {
			release()
			return nil, nil, err
		}
		views.Close() // the sorted views hold all the rebuild reads: let the store's go
		m, err := localMerge(orders, spill)
		if err != nil {
			release()
			return nil, nil, err
		}
		return m, release, nil
	})
}

// StoreOptions are o for a store opened only to be rebuilt (the rebuild
// command when no crawl holds the store; bench): the rebuild reads each
// shard's view once, front to back, so the caches a crawl's lookups use
// would hold memory for nothing while the merge needs it. No name cache
// (a writable open fills it with every name that fits, 16 Mi at most: a
// few hundred MiB at L), no record cache, and a block cache of
// rebuildBlockCache per shard rather than a share of Badger's 256 MiB
// (Badger needs one for compressed tables; a scan decompresses each block
// once either way).
func StoreOptions(o graph.Options) graph.Options {
	o.NameCache, o.RecordCache, o.BlockCacheSize = -1, -1, rebuildBlockCache
	return o
}

const rebuildBlockCache = 4 << 20

// shardChunk is the chunk each of k shards' views is sorted in, and its
// link-word tally spills at: graph.DefaultSpillChunk shared out between
// the shards, no less than minShardChunk. A view that fits its chunk
// stays in memory until the rebuild ends and every shard's tally fills
// its chunk at once (their edges are walked side by side), so a chunk
// each of the default size held K times that: at graphgen M the eight
// shards' views, which each fit, kept 440 MiB that one shard's spilled
// view did not. Smaller chunks make more runs, each read through a
// buffer of a few hundred KiB while a stream is merged.
func shardChunk(k int) int {
	return max(graph.DefaultSpillChunk/max(k, 1), minShardChunk)
}

// minShardChunk bounds the runs a shard's view makes (a few hundred
// KiB of buffer each while merged): at L, 3 GB of views make about 400.
const minShardChunk = 8 << 20

// exportShards exports every shard of views to dir/shard=NN/ (PartDir),
// one shard per core at a time, views taken at asOf, each sorted through
// runs in dir itself (beside the parts).
func exportShards(ctx context.Context, views *shard.Snapshot, dir string, asOf time.Time) ([]*snapshot.Part, error) {
	parts := make([]*snapshot.Part, views.Shards())
	err := parallel(ctx, views.Shards(), func(i int) error {
		p, err := ExportPart(ctx, views.Shard(i), filepath.Join(dir, PartDir(i)),
			PartInfo{Shard: i, Shards: views.Shards(), AsOf: asOf}, graph.Spill{Dir: dir})
		if err != nil {
			return fmt.Errorf("exporting shard %d: %w", i, err)
		}
		parts[i] = p
		return nil
	})
	return parts, err
}

// RunParts is Run over the parts of every shard of a store, exported
// elsewhere (a fleet's nodes) and read from local directories, in shard
// order.
func RunParts(ctx context.Context, parts []*snapshot.Part, opts Options) (*data.Manifest, error) {
	return run(ctx, opts, func(*snapshot.Dir, string) (Source, func() error, error) {
		m, err := OpenMerge(parts)
		return m, func() error { return nil }, err
	})
}

// PartDir is the directory name of shard i's part, as under
// parts/<rebuild id>/ in an object store (objstore's layout).
func PartDir(i int) string { return fmt.Sprintf("shard=%02d", i) }

// RunFrom is Run over any Source (tests, tools that hold a view).
func RunFrom(ctx context.Context, src Source, opts Options) (*data.Manifest, error) {
	return run(ctx, opts, func(*snapshot.Dir, string) (Source, func() error, error) {
		return src, func() error { return nil }, nil
	})
}

// parallel runs fn(0..n-1), as many at once as there are cores, and
// returns the first error (the others stop at their next check of ctx).
func parallel(ctx context.Context, n int, fn func(i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				errs[i] = context.Cause(ctx)
				return
			}
			defer func() { <-sem }()
			if errs[i] = fn(i); errs[i] != nil {
				cancel(errs[i])
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (o *Options) setDefaults() error {
	if o.DataDir == "" {
		return errors.New("rebuild: no data directory")
	}
	if o.Now.IsZero() {
		return errors.New("rebuild: no as-of time")
	}
	o.Now = o.Now.UTC().Truncate(time.Second) // the id has seconds; so do the times derived from it
	if o.Tiers == nil {
		o.Tiers = schedule.DefaultTiers
	}
	if err := o.Tiers.Validate(); err != nil {
		return err
	}
	if o.MinInDomains < 0 {
		return fmt.Errorf("rebuild: min in-domains %d: want 0 (the default) or more", o.MinInDomains)
	}
	if o.Keep == 0 {
		o.Keep = DefaultKeep
	}
	if o.Keep < 1 {
		return fmt.Errorf("rebuild: keep %d: want at least 1", o.Keep)
	}
	if o.Rank.Damping == 0 {
		workers := o.Rank.Workers
		o.Rank = rank.DefaultParams
		o.Rank.Workers = workers
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MapTop == 0 {
		o.MapTop = DefaultMapTop
	}
	if o.MaxShrink == 0 {
		o.MaxShrink = DefaultMaxShrink
	}
	if o.MaxShrink >= 1 {
		return fmt.Errorf("rebuild: max shrink %g: want a fraction below 1 (negative: no guard)", o.MaxShrink)
	}
	if o.Layout.Workers == 0 {
		o.Layout.Workers = o.Rank.Workers
	}
	return nil
}

func run(ctx context.Context, opts Options, open func(dir *snapshot.Dir, id string) (Source, func() error, error)) (*data.Manifest, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	log := opts.Logger
	id := snapshot.ID(opts.Now)
	// The snapshot directory: the lock, what killed rebuilds left, and
	// where snapshots live (its Storage).
	dir := snapshot.Local(opts.DataDir)
	release, err := dir.Lock()
	if err != nil {
		return nil, err
	}
	defer release()
	defer boundGC()()
	removed, err := dir.CleanStale()
	if err != nil {
		return nil, fmt.Errorf("removing what an earlier rebuild left: %w", err)
	}
	if len(removed) > 0 {
		log.Info("removed what an earlier, interrupted rebuild left", "entries", removed)
	}
	var st snapshot.Storage = dir
	if opts.Storage != nil {
		st = opts.Storage
	}
	prevID, err := st.Current()
	if err != nil {
		return nil, err
	}
	snap, err := snapshot.Begin(st, id)
	if err != nil {
		return nil, err
	}
	defer snap.Abort() // after Commit, nothing

	b := &builder{opts: opts, log: log, snap: snap, counts: map[string]int64{}}
	if prevID != "" {
		prev := snapshot.At(st, prevID)
		b.prev = &prev
	}
	start := time.Now()
	src, closeSrc, err := open(dir, id)
	if err != nil {
		return nil, err
	}
	b.timed("export", start, 0)
	err = b.build(ctx, src)
	if cerr := closeSrc(); err == nil && cerr != nil {
		err = fmt.Errorf("closing the store snapshot: %w", cerr)
	}
	if err != nil {
		return nil, err
	}

	// Commit: the manifest, the snapshot published, then `current`.
	start = time.Now()
	if err := b.stage(ctx, "commit"); err != nil {
		return nil, err
	}
	m := &data.Manifest{
		ID:            id,
		AsOf:          opts.Now,
		SchemaVersion: data.SchemaVersion,
		Previous:      prevID,
		Counts:        b.counts,
		Rank:          b.rankInfo,
		Tiers:         opts.Tiers,
		CreatedAt:     time.Now().UTC(),

		SchedulePartitions: b.partitions,
	}
	b.timed("commit", start, 0) // timed before writing so that the manifest includes it
	m.Stages = b.stages
	if err := snap.Commit(m); err != nil {
		return nil, err
	}
	if prevID != "" && !opts.AcceptShrink {
		prev, err := snapshot.ReadManifest(st, prevID)
		if err != nil {
			log.Warn("cannot read the current snapshot's manifest: the shrink guard is off for this rebuild", "err", err)
		}
		if why := shrinkReason(prev, b.counts, opts.MaxShrink); why != "" {
			log.Warn("snapshot written but not made current", "id", id, "current", prevID, "why", why)
			return m, &ShrinkError{ID: id, Current: prevID, Reason: why}
		}
	}
	if err := st.SetCurrent(id); err != nil {
		return nil, fmt.Errorf("snapshot %s is complete but %s could not be moved to it: %w", id, snapshot.CurrentName, err)
	}
	log.Info("snapshot complete", "id", id, "dir", st.Location(id, ""), "domains", b.counts[data.DomainsFile],
		"edges", b.counts[data.EdgesFile], "ranked", b.rankInfo.Ranked, "seconds", time.Since(b.began).Seconds())

	pruned, err := snapshot.Prune(st, opts.Keep)
	if err != nil {
		return m, fmt.Errorf("snapshot %s is current, but pruning old snapshots failed: %w", id, err)
	}
	if len(pruned) > 0 {
		log.Info("pruned old snapshots", "keep", opts.Keep, "removed", pruned)
	}
	return m, nil
}
