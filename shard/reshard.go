package shard

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// ReshardOptions configure Reshard.
type ReshardOptions struct {
	Shards int // the new K
	// Platforms the new store routes by; nil keeps the old store's (the
	// default table's, for a store of one shard, which routes by none).
	Platforms []string
	// Verify, when set, compares the old store with the new one before
	// the new one takes its place (the command checks that both merge
	// into the same snapshot content: rebuild.SameContent); an error
	// leaves the old store in place and removes the new one. scratch is a
	// directory for its files, removed after the reshard (and, after a
	// kill, by the next reshard).
	Verify func(old, new *Store, scratch string) error
	// DefaultPlatforms are the platforms a store of one shard is given
	// when Platforms is nil.
	DefaultPlatforms []string
	Logger           *slog.Logger
	// Now names the old store's directory after the swap (store.old-<time>).
	Now time.Time
	// SortChunk is the chunk of each old shard's sort into name order
	// (graph.Spill.ChunkBytes; 0: graph.DefaultSpillChunk).
	SortChunk int

	// afterSort, in tests, is called with the scratch directory once old
	// shard k is sorted into name order, before it is copied.
	afterSort func(k int, scratch string)
}

// ReshardResult says what a reshard did.
type ReshardResult struct {
	From, To int
	Old      string // where the old store went
	Domains  int64  // domain records copied (a name known to several shards counts in each)
}

// Reshard rewrites the store at dir into opts.Shards shards, offline: it
// opens the store for writing (so no crawl or rebuild can hold it: one that
// does makes it fail with graph.ErrLocked), copies every shard's records,
// in name order, into a new store made beside it (every domain into its
// shard under the new routing; a name several shards know is merged as a
// rebuild merges it: each old shard is sorted into name order through run
// files in a scratch directory beside dir, .NAME.reshard-sort-*, removed
// at the end), checks the new store with opts.Verify, and only then
// swaps the two directories in one step (renameat2 RENAME_EXCHANGE): dir is
// the old store or the new one, never neither. The old one is kept as
// dir.old-<time>, for the operator to remove. A reshard cut off before the
// swap leaves dir as it was (and .NAME.reshard-* directories, which the
// next reshard removes); cut off just after it, the old store is left
// under dir.reshard-<time>, whole.
func Reshard(dir string, opts ReshardOptions) (*ReshardResult, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	old, err := Open(dir, Options{Graph: graph.Options{Logger: log, NameCache: -1, RecordCache: -1}})
	if err != nil {
		return nil, err
	}
	defer func() {
		if old != nil {
			old.Close()
		}
	}()
	platforms := opts.Platforms
	if platforms == nil {
		platforms = old.Router().Platforms()
		if !old.Sharded() {
			platforms = opts.DefaultPlatforms
		}
	}
	r, err := NewRouter(opts.Shards, platforms)
	if err != nil {
		return nil, err
	}
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	removeStale(parent, "."+base+".reshard-")
	tmp, err := os.MkdirTemp(parent, "."+base+".reshard-")
	if err != nil {
		return nil, err
	}
	built := false
	defer func() {
		if !built {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp(parent, "."+base+".reshard-sort-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	sp := graph.Spill{Dir: scratch, ChunkBytes: opts.SortChunk}
	res := &ReshardResult{From: old.Shards(), To: r.Shards()}
	log.Info("resharding: copying the store", "from", res.From, "to", res.To, "into", tmp)
	if r.Shards() == 1 {
		// One shard: today's layout, the Badger store at dir itself.
		s, err := graph.Open(tmp, graph.Options{Create: true, Logger: log, NameCache: -1, RecordCache: -1})
		if err != nil {
			return nil, err
		}
		err = copyInto(old, []*graph.Store{s}, r, res, sp, opts.afterSort)
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	} else {
		if err := fill(tmp, r, nil); err != nil {
			return nil, err
		}
		nw, err := Open(tmp, Options{Graph: graph.Options{Logger: log, NameCache: -1}})
		if err != nil {
			return nil, err
		}
		err = copyInto(old, nw.shards, r, res, sp, opts.afterSort)
		if cerr := nw.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	if opts.Verify != nil {
		nw, err := Open(tmp, Options{Graph: graph.Options{Logger: log, NameCache: -1}})
		if err != nil {
			return nil, fmt.Errorf("the new store does not open: %w", err)
		}
		err = opts.Verify(old, nw, scratch)
		nw.Close()
		if err != nil {
			return nil, fmt.Errorf("the new store does not hold what the old one does (the old one is unchanged): %w", err)
		}
	}
	if err := old.Close(); err != nil {
		return nil, err
	}
	old = nil
	if err := atomicfile.SyncDir(tmp); err != nil {
		return nil, err
	}
	// The swap: the new store under a visible name first, then exchanged
	// with dir in one step.
	stamp := opts.Now.UTC().Format("20060102T150405Z")
	staged := filepath.Join(parent, base+".reshard-"+stamp)
	if err := os.Rename(tmp, staged); err != nil {
		return nil, err
	}
	built = true
	res.Old = filepath.Join(parent, base+".old-"+stamp)
	if err := unix.Renameat2(unix.AT_FDCWD, staged, unix.AT_FDCWD, dir, unix.RENAME_EXCHANGE); err != nil {
		if !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOSYS) && !errors.Is(err, unix.EXDEV) {
			return nil, fmt.Errorf("swapping in the new store (%s, whole and checked): %w", staged, err)
		}
		// No exchange on this file system: two renames, with a moment
		// between them when dir does not exist.
		log.Warn("the file system cannot swap two directories in one step: renaming one after the other", "err", err)
		if err := os.Rename(dir, res.Old); err != nil {
			return nil, err
		}
		if err := os.Rename(staged, dir); err != nil {
			return nil, fmt.Errorf("the old store is at %s, the new one at %s: move the new one to %s: %w", res.Old, staged, dir, err)
		}
	} else if err := os.Rename(staged, res.Old); err != nil {
		return nil, fmt.Errorf("the new store is in place; the old one is at %s: %w", staged, err)
	}
	if err := atomicfile.SyncDir(parent); err != nil {
		return nil, err
	}
	log.Info("resharded", "from", res.From, "to", res.To, "old_store", res.Old)
	return res, nil
}

// copyInto copies every record of old's shards into the new shards,
// routed by r: each old shard is sorted into name order as sp says
// (graph.Snapshot.LoadByName: through run files, memory a chunk and the
// shard's name index) and walked, and each new shard imports its domains
// in batches on its own goroutine.
func copyInto(old *Store, to []*graph.Store, r Router, res *ReshardResult, sp graph.Spill, afterSort func(k int, scratch string)) error {
	removals, err := old.Removals()
	if err != nil {
		return err
	}
	for _, s := range to {
		if err := s.ImportRemovals(removals); err != nil {
			return err
		}
	}
	sn, err := old.Snapshot()
	if err != nil {
		return err
	}
	defer sn.Close()
	queues := make([]chan []graph.ImportDomain, len(to))
	errs := make([]error, len(to))
	var wg sync.WaitGroup
	for i := range to {
		queues[i] = make(chan []graph.ImportDomain, 2)
		wg.Go(func() {
			for b := range queues[i] {
				if errs[i] == nil {
					errs[i] = importSplitting(to[i], b)
				}
			}
		})
	}
	const batchDomains, batchEdges = 2000, 50_000
	batches := make([][]graph.ImportDomain, len(to))
	edgesIn := make([]int, len(to))
	send := func(i int) {
		if len(batches[i]) > 0 {
			queues[i] <- batches[i]
			batches[i], edgesIn[i] = nil, 0
		}
	}
	var readErr error
	for k := range sn.Shards() {
		no, err := sn.Shard(k).LoadByName(sp)
		if err != nil {
			readErr = fmt.Errorf("shard %d: %w", k, err)
			break
		}
		if afterSort != nil {
			afterSort(k, sp.Dir)
		}
		// Each name's first seen in this shard, for the edges' targets
		// (graph.ImportEdge.DstFirstSeen): 8 bytes a name, one walk more.
		firstSeen := make([]int64, no.Len())
		readErr = no.Each(graph.NamedState, func(nd *graph.Named) error {
			if !nd.State.FirstSeen.IsZero() {
				firstSeen[nd.Index] = nd.State.FirstSeen.UnixNano()
			}
			return nil
		})
		if readErr == nil {
			readErr = no.Each(graph.NamedAll, func(nd *graph.Named) error {
				// The walk reuses its buffers once a domain is done, and the
				// batch is imported later: the visits' values are copied (the
				// state's and edges' strings are the domain's own).
				d := graph.ImportDomain{State: nd.State, Visits: make([]graph.RawVisit, len(nd.Visits))}
				for j, v := range nd.Visits {
					d.Visits[j] = graph.RawVisit{StartedAt: v.StartedAt, Value: bytes.Clone(v.Value)}
				}
				d.Edges = make([]graph.ImportEdge, len(nd.Edges))
				for j, e := range nd.Edges {
					d.Edges[j] = graph.ImportEdge{Dst: no.Name(e.Dst), FirstSeen: e.FirstSeen, LastSeen: e.LastSeen,
						Nofollow: e.Nofollow, Sitewide: e.Sitewide, Words: e.Words}
					if ns := firstSeen[e.Dst]; ns != 0 {
						d.Edges[j].DstFirstSeen = time.Unix(0, ns).UTC()
					}
				}
				i := r.Of(nd.State.Name)
				batches[i] = append(batches[i], d)
				edgesIn[i] += len(d.Edges)
				res.Domains++
				if len(batches[i]) >= batchDomains || edgesIn[i] >= batchEdges {
					send(i)
				}
				return nil
			})
		}
		if cerr := no.Close(); readErr == nil {
			readErr = cerr
		}
		if readErr != nil {
			readErr = fmt.Errorf("shard %d: %w", k, readErr)
			break
		}
	}
	for i := range to {
		if readErr == nil {
			send(i)
		}
		close(queues[i])
	}
	wg.Wait()
	return errors.Join(append([]error{readErr}, errs...)...)
}

// importSplitting imports ds, in halves when a batch is too large for one
// transaction.
func importSplitting(s *graph.Store, ds []graph.ImportDomain) error {
	err := s.Import(ds)
	if !errors.Is(err, graph.ErrBatchTooLarge) || len(ds) < 2 {
		return err
	}
	if err := importSplitting(s, ds[:len(ds)/2]); err != nil {
		return err
	}
	return importSplitting(s, ds[len(ds)/2:])
}
