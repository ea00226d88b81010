package shard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// Store is a link store of K shards, each its own graph.Store, with the
// domains routed among them by Router. Its methods are safe for
// concurrent use; writes to different shards run in parallel.
type Store struct {
	dir    string
	router Router
	plain  bool // one shard in today's layout: dir is the Badger store itself
	shards []*graph.Store
	gopts  graph.Options // each shard's, to open one again (ReplaceShard, SetWritable)
	// writable[i]: shard i is open for writing. All are, but in a store
	// opened with ReadOnlyShards, where only those SetWritable opened are.
	writable []bool
	// fences are the shards' fences (SetFence), set again on a shard's
	// store whenever it is opened anew.
	fences []func() error
	// closed[i]: shard i was closed by CloseShard and not opened since.
	closed []bool
	// heldChanged: HeldChanged.
	heldChanged chan struct{}
	// swap is held for reading by the methods a crawl calls on one
	// shard, for writing by ReplaceShard while it swaps a shard.
	swap sync.RWMutex
}

// Options configure Open.
type Options struct {
	// Graph are every shard's options. Create is ignored (Create below
	// decides); in a store of K shards, each takes a Kth of the name
	// cache, record cache, memtable and block cache (ShareOptions).
	Graph graph.Options
	// Create makes a store where dir holds none, of Shards shards routed
	// by Platforms. Without it, Open refuses with graph.ErrNoStore.
	Create bool
	// Shards is K for Create (0 or 1: one shard, today's layout). When
	// opening an existing store, 0 takes its K, any other value must be
	// its K (*ShardsError otherwise).
	Shards int
	// Platforms are the shared platforms' suffixes a new store routes by
	// (every site of one in one shard): the crawl's --platform table.
	// Recorded in the store; they do not change afterwards.
	Platforms []string
	// ReadOnlyShards opens every shard of a sharded store read-only (after
	// creating the store, with Create): SetWritable opens one for writing.
	// A fleet node writes only the shards it holds, and a shard open
	// read-only costs no compactors, memtable or write-ahead log: at K = 64
	// an idle node took 63 to 72 ms of CPU a second with every shard
	// writable, 5 ms with every shard read-only, and opening them took
	// 0.7 to 0.9 CPU-s against 0.11 to 0.15 (shared 2-core machine).
	// A shard SetWritable opens for writing does not compact level 0 when
	// it is closed again (graph.GCOptions.NoCloseCompaction): a node gives
	// shards up and takes them back, and each give-up's compaction built a
	// second table (a 7 MiB buffer and a file) for the one its flush had
	// just written; the compactors, which run while the shard is held,
	// merge level 0 once it holds five tables.
	// Ignored for a store of one shard in today's layout.
	ReadOnlyShards bool
}

// ShardsError: a store opened with a number of shards it does not have.
type ShardsError struct {
	Dir        string
	Have, Want int
}

func (e *ShardsError) Error() string {
	return fmt.Sprintf("the store at %s has %d shard%s, not %d: `mapthenet store reshard --shards %d` rewrites it (offline)",
		e.Dir, e.Have, plural(e.Have), e.Want, e.Want)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Open opens the store in dir: today's layout (dir is one Badger store:
// one shard) or K shards under dir/shard-NN with their LayoutFile. A
// damaged, locked or missing shard fails the open, naming it; no shard is
// left open then.
func Open(dir string, opts Options) (*Store, error) {
	l, sharded, err := ReadLayout(dir)
	if err != nil {
		return nil, err
	}
	if !sharded {
		exists, err := holdsStore(dir)
		if err != nil {
			return nil, err
		}
		switch {
		case exists && opts.Shards > 1:
			return nil, &ShardsError{Dir: dir, Have: 1, Want: opts.Shards}
		case !exists && opts.Shards > 1 && opts.Create && !opts.Graph.ReadOnly:
			r, err := NewRouter(opts.Shards, opts.Platforms)
			if err != nil {
				return nil, err
			}
			if err := create(dir, r); err != nil {
				return nil, err
			}
			if l, sharded, err = ReadLayout(dir); err != nil || !sharded {
				return nil, fmt.Errorf("shard: the store made at %s does not read back: %v", dir, err)
			}
		default:
			go1 := opts.Graph
			go1.Create = opts.Create
			s, err := graph.Open(dir, go1)
			if err != nil {
				return nil, err
			}
			r, _ := NewRouter(1, nil)
			return &Store{dir: dir, router: r, plain: true, shards: []*graph.Store{s}}, nil
		}
	}
	if opts.Shards > 0 && opts.Shards != l.Shards {
		return nil, &ShardsError{Dir: dir, Have: l.Shards, Want: opts.Shards}
	}
	r, err := l.Router()
	if err != nil {
		return nil, err
	}
	gopts := ShareOptions(opts.Graph, l.Shards)
	if opts.ReadOnlyShards {
		gopts.GC.NoCloseCompaction = true
	}
	s := &Store{dir: dir, router: r, shards: make([]*graph.Store, l.Shards), gopts: gopts,
		writable: make([]bool, l.Shards), fences: make([]func() error, l.Shards), closed: make([]bool, l.Shards),
		heldChanged: make(chan struct{}, 1)}
	err = parallel(l.Shards, func(i int) error {
		var st *graph.Store
		var err error
		if opts.ReadOnlyShards && !gopts.ReadOnly {
			st, err = openReadOnly(dir, l, i, gopts)
		} else {
			st, err = openShard(dir, l, i, gopts)
			s.writable[i] = !gopts.ReadOnly
		}
		s.shards[i] = st
		return err
	})
	if err != nil {
		for _, st := range s.shards {
			if st != nil {
				st.Close()
			}
		}
		return nil, err
	}
	return s, nil
}

// OpenShard opens shard i of the sharded store in dir alone (a fleet node
// holds some of the shards: the others need not be there), checking that
// it is that shard of the store's layout. opts are the shard's own
// (ShareOptions divides a machine's among its shards).
func OpenShard(dir string, i int, opts graph.Options) (*graph.Store, Layout, error) {
	l, sharded, err := ReadLayout(dir)
	if err != nil {
		return nil, l, err
	}
	if !sharded {
		return nil, l, fmt.Errorf("%w: %s has no %s: not a sharded store", ErrLayout, dir, LayoutFile)
	}
	if i < 0 || i >= l.Shards {
		return nil, l, fmt.Errorf("shard: shard %d of a store of %d", i, l.Shards)
	}
	s, err := openShard(dir, l, i, opts)
	return s, l, err
}

// readOnly are the options of a shard opened read-only: no caches of
// names or records (a read-only store's lookups read the database).
func readOnly(o graph.Options) graph.Options {
	o.ReadOnly = true
	o.NameCache, o.RecordCache = -1, -1
	return o
}

// openReadOnly opens shard i read-only (opts are its writable options).
// Badger cannot open read-only a store that a killed process left with a
// write-ahead log to cut short; such a shard (any that fails to open
// read-only, unless another process holds it) is opened once for writing,
// which recovers it as every shard's open did before ReadOnlyShards, closed,
// and opened read-only again. When the writable open fails too, its error
// is returned: it is the one that says what is wrong.
func openReadOnly(dir string, l Layout, i int, opts graph.Options) (*graph.Store, error) {
	st, err := openShard(dir, l, i, readOnly(opts))
	if err == nil || errors.Is(err, graph.ErrLocked) {
		return st, err
	}
	rw, rwErr := openShard(dir, l, i, opts)
	if rwErr != nil {
		return nil, rwErr
	}
	if err := rw.Close(); err != nil {
		return nil, err
	}
	if opts.Logger != nil {
		opts.Logger.Info("opened a shard once for writing to open it read-only (it was not closed cleanly)",
			"shard", i, "read_only_error", err)
	}
	return openShard(dir, l, i, readOnly(opts))
}

func openShard(dir string, l Layout, i int, opts graph.Options) (*graph.Store, error) {
	sdir := filepath.Join(dir, ShardDir(i))
	opts.Create = false
	st, err := graph.Open(sdir, opts)
	if errors.Is(err, graph.ErrNoStore) {
		return nil, fmt.Errorf("%w: shard %d (%s) is missing from the store of %d shards: restore it from a backup",
			ErrLayout, i, sdir, l.Shards)
	}
	if err != nil {
		return nil, err
	}
	if err := checkShard(st, sdir, l, i); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// ShareOptions are one shard's options in a store of k on one machine:
// the caches, memtable and block cache that one store would have, shared
// out (a memtable no smaller than 16 MiB, a name cache no smaller than
// 1 Mi names), so that K shards take about the memory of one store, and
// its compactors (at least Badger's minimum of 2 per shard), each of which
// wakes every 50 ms: a store of 6 idle shards took 33 ms of CPU a second
// with Badger's 4 each, 25 ms with 2 (64 shards: 93 and 78 ms), on the
// shared 2-core machine.
func ShareOptions(o graph.Options, k int) graph.Options {
	if k <= 1 {
		return o
	}
	if o.NameCache >= 0 {
		n := o.NameCache
		if n == 0 {
			n = graph.DefaultNameCache
		}
		o.NameCache = max(n/k, 1<<20)
	}
	if o.RecordCache >= 0 {
		n := o.RecordCache
		if n == 0 {
			n = graph.DefaultRecordCache
		}
		o.RecordCache = max(n/k, 16<<20)
	}
	if o.MemTableSize == 0 {
		o.MemTableSize = max(int64(64<<20)/int64(k), 16<<20)
	}
	if o.BlockCacheSize == 0 {
		o.BlockCacheSize = max(int64(256<<20)/int64(k), 16<<20)
	}
	if o.Compactors == 0 {
		o.Compactors = max(4/k, 2)
	}
	return o
}

// HeapHeld is the Go heap the shards hold for themselves now
// (graph.Store.HeapHeld: a writable shard's memtable arena, and its
// caches as they have grown). It changes as a fleet node takes and gives
// up shards (SetWritable) and as the caches fill.
func (s *Store) HeapHeld() int64 {
	s.swap.RLock()
	defer s.swap.RUnlock()
	var held int64
	for _, st := range s.shards {
		held += st.HeapHeld()
	}
	return held
}

// holdsStore reports whether dir exists and holds anything.
func holdsStore(dir string) (bool, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return len(entries) > 0, err
}

// create makes a store of r.Shards() shards at dir, which must not exist
// or be empty: every shard and the layout file in a new directory beside
// it, then renamed into place, so that a store appears whole or not at
// all (a killed create leaves only a .NAME.new-* directory beside it,
// which the next create removes).
func create(dir string, r Router) error {
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	removeStale(parent, "."+base+".new-")
	tmp, err := os.MkdirTemp(parent, "."+base+".new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp) // after the rename, nothing
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	restore := collectLess()
	err = fill(tmp, r, nil)
	restore()
	if err != nil {
		return err
	}
	return moveInto(tmp, dir)
}

// fill makes r's empty shards and layout file in dir, running each new
// shard through write (when not nil) before it is closed.
func fill(dir string, r Router, write func(i int, s *graph.Store) error) error {
	l := layoutOf(r)
	opts := ShareOptions(graph.Options{Create: true, NameCache: -1, RecordCache: -1}, r.Shards())
	if write == nil {
		// Only marked, then closed: small memtables and caches. A store
		// opened right after (crawl --fleet's first run) then takes fresh
		// memory rather than reusing, and zeroing, K full-sized memtables
		// it has just let go (0.3 to 0.8 CPU-s at K = 6).
		opts.MemTableSize, opts.BlockCacheSize = 1<<20, 1<<20
		// A shard that holds only its mark has nothing to compact.
		opts.GC.NoCloseCompaction = true
	}
	err := parallel(r.Shards(), func(i int) error {
		sdir := filepath.Join(dir, ShardDir(i))
		s, err := graph.Open(sdir, opts)
		if err != nil {
			return err
		}
		err = markShard(s, l, i)
		if err == nil && write != nil {
			err = write(i, s)
		}
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = atomicfile.SyncDir(sdir)
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := writeLayout(dir, l); err != nil {
		return err
	}
	return atomicfile.SyncDir(dir)
}

// moveInto renames the directory tmp to dir (which must not exist, or be
// an empty directory) and syncs the parent.
func moveInto(tmp, dir string) error {
	if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("shard: %s is not empty: %w", dir, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(dir))
}

// removeStale removes the entries of dir whose names start with prefix:
// what a killed create or reshard left.
func removeStale(dir, prefix string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			os.RemoveAll(filepath.Join(dir, e.Name()))
		}
	}
}

// parallel runs fn(0..n-1), at most GOMAXPROCS at once, and joins the
// errors.
func parallel(n int, fn func(i int) error) error {
	errs := make([]error, n)
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Shards is K.
func (s *Store) Shards() int { return len(s.shards) }

// Router is the store's routing.
func (s *Store) Router() Router { return s.router }

// Sharded reports whether the store has the sharded layout (shard
// directories and a LayoutFile), rather than today's single store.
func (s *Store) Sharded() bool { return !s.plain }

// Shard is shard i's store.
func (s *Store) Shard(i int) *graph.Store {
	s.swap.RLock()
	defer s.swap.RUnlock()
	return s.shards[i]
}

// ShardDir is where shard i lives.
func (s *Store) ShardDir(i int) string {
	if s.plain {
		return s.dir
	}
	return filepath.Join(s.dir, ShardDir(i))
}

// ShardOf is the shard domain lives in.
func (s *Store) ShardOf(domain string) int { return s.router.Of(domain) }

// Close closes every shard.
func (s *Store) Close() error {
	s.swap.Lock()
	defer s.swap.Unlock()
	return parallel(len(s.shards), func(i int) error { return s.shards[i].Close() })
}

// SetFence sets shard i's fence (graph.Store.SetFence): every commit to
// that shard first calls check, and is refused (graph.ErrFenced) when it
// fails. nil removes it. The fence stays with the shard when its store
// is opened anew (SetWritable, ReplaceShard).
func (s *Store) SetFence(i int, check func() error) {
	s.swap.Lock() // against a reopen that would miss it
	defer s.swap.Unlock()
	if s.fences != nil {
		s.fences[i] = check
	}
	s.shards[i].SetFence(check)
}

// Writable reports whether shard i is open for writing (see
// Options.ReadOnlyShards, SetWritable).
func (s *Store) Writable(i int) bool {
	s.swap.RLock()
	defer s.swap.RUnlock()
	if s.plain {
		return !s.shards[0].ReadOnly()
	}
	return s.writable[i]
}

// SetWritable opens shard i of a sharded store for writing (writable), or
// read-only again, unless it is open so already: its store is closed and
// opened anew, with its fence. Going read-only, the close flushes and syncs
// all written to the shard's files before SetWritable returns (a fleet
// node gives a shard up only then). Calls on the store wait while the
// shard is swapped; a *graph.Store Shard returned for it before is closed.
// When the new open fails, the shard is opened as it was again (or, if
// that fails too, left closed and not writable: its writes are refused,
// with its fence's error when that refuses) and the error returned.
func (s *Store) SetWritable(i int, writable bool) error {
	if s.plain {
		return fmt.Errorf("%w: %s is a store of one shard in the old layout", ErrLayout, s.dir)
	}
	if i < 0 || i >= len(s.shards) {
		return fmt.Errorf("shard: shard %d of a store of %d", i, len(s.shards))
	}
	if writable && s.gopts.ReadOnly {
		return fmt.Errorf("shard %d: %w", i, graph.ErrReadOnly)
	}
	s.swap.Lock()
	defer s.swap.Unlock()
	if s.writable[i] == writable && !s.closed[i] {
		return nil
	}
	l, _, err := ReadLayout(s.dir)
	if err != nil {
		return err
	}
	// A failed close is reported, but the store is closed all the same
	// (and every commit was synced when it returned): open it anew.
	cerr := s.shards[i].Close()
	if cerr != nil {
		cerr = fmt.Errorf("shard %d: closing it to open it %s: %w", i, modeName(writable), cerr)
	}
	st, err := s.openLocked(l, i, writable)
	if err != nil {
		err = fmt.Errorf("shard %d: opening it %s: %w", i, modeName(writable), err)
		if old, oerr := s.openLocked(l, i, !writable); oerr == nil {
			s.setShard(i, old)
		} else {
			// Left closed: not writable; SetWritable(i, true) tries again.
			s.writable[i] = false
			err = fmt.Errorf("%w; and opening it %s again: %w", err, modeName(!writable), oerr)
		}
		return errors.Join(cerr, err)
	}
	s.setShard(i, st)
	s.writable[i] = writable
	return cerr
}

// setShard puts st in shard i's place (s.swap held for writing).
func (s *Store) setShard(i int, st *graph.Store) {
	s.shards[i] = st
	s.closed[i] = false
	s.heldHasChanged()
}

// HeldChanged receives a value (sent without blocking; never closed)
// after a shard was opened anew or closed (SetWritable, ReplaceShard,
// CloseShard), so that what HeapHeld says may have changed: the crawl's
// soft memory limit follows at once, not at its next recheck. (A node
// that takes its 64 shards at its start opens them within a second or
// two, 21 MiB of memtable arena each; until the limit followed, the
// collector ran without pause: 30 collections in two seconds of a
// BenchmarkFleetCrawl node's start.) nil for a store of one shard in
// today's layout.
func (s *Store) HeldChanged() <-chan struct{} { return s.heldChanged }

func (s *Store) heldHasChanged() {
	select {
	case s.heldChanged <- struct{}{}:
	default:
	}
}

// CloseShard closes shard i of a sharded store and leaves it closed: all
// written to it is in its files when CloseShard returns, as after
// SetWritable's close; its reads then fail with graph.ErrClosed and its
// writes with its fence's error (or ErrClosed) until SetWritable opens it
// again (Shard(i)'s own reads fail with Badger's "DB Closed"). A fleet
// node that leaves closes so the shards it gives up
// (fleetnode.Handler.Leaving): opening each read-only again, for Close to
// close it a moment later, cost a node as many opens as it held shards.
func (s *Store) CloseShard(i int) error {
	if s.plain {
		return fmt.Errorf("%w: %s is a store of one shard in the old layout", ErrLayout, s.dir)
	}
	if i < 0 || i >= len(s.shards) {
		return fmt.Errorf("shard: shard %d of a store of %d", i, len(s.shards))
	}
	s.swap.Lock()
	defer s.swap.Unlock()
	s.writable[i] = false
	s.closed[i] = true
	defer s.heldHasChanged()
	if err := s.shards[i].Close(); err != nil {
		return fmt.Errorf("shard %d: %w", i, err)
	}
	return nil
}

// openLocked opens shard i of the sharded store (s.swap held, its old
// store closed) for writing or read-only, with its fence.
func (s *Store) openLocked(l Layout, i int, writable bool) (*graph.Store, error) {
	var st *graph.Store
	var err error
	if writable {
		st, err = openShard(s.dir, l, i, s.gopts)
	} else {
		st, err = openReadOnly(s.dir, l, i, s.gopts)
	}
	if err == nil {
		st.SetFence(s.fences[i])
	}
	return st, err
}

func modeName(writable bool) string {
	if writable {
		return "for writing"
	}
	return "read-only"
}

// Domain returns a domain's state as its own shard holds it: a domain
// known elsewhere only as a link target, and never visited or seeded, is
// not found (found is false), as a never-seen one.
func (s *Store) Domain(name string) (data.DomainState, bool, error) {
	s.swap.RLock()
	defer s.swap.RUnlock()
	i := s.router.Of(name)
	if err := s.closedErr(i); err != nil {
		return data.DomainState{}, false, err
	}
	return s.shards[i].Domain(name)
}

// closedErr: shard i was closed by CloseShard (s.swap held).
func (s *Store) closedErr(i int) error {
	if s.closed != nil && s.closed[i] {
		return fmt.Errorf("shard %d: %w", i, graph.ErrClosed)
	}
	return nil
}

// IsRemoved reports whether name is on the removal list (every shard
// keeps the whole list).
func (s *Store) IsRemoved(name string) (bool, error) {
	s.swap.RLock()
	defer s.swap.RUnlock()
	i := s.router.Of(name)
	if err := s.closedErr(i); err != nil {
		return false, err
	}
	return s.shards[i].IsRemoved(name)
}

// Removals lists the removal list in name order (the union of the
// shards': a removal cut off half-way is in some only).
func (s *Store) Removals() ([]graph.Removal, error) {
	seen := map[string]bool{}
	var out []graph.Removal
	for _, sh := range s.shards {
		rs, err := sh.Removals()
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if !seen[r.Name] {
				seen[r.Name] = true
				out = append(out, r)
			}
		}
	}
	slices.SortFunc(out, func(a, b graph.Removal) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// AddDomains adds names to their own shards (graph.Store.AddDomains),
// shards in parallel.
func (s *Store) AddDomains(names []string, seen time.Time, seeded bool) error {
	s.swap.RLock()
	defer s.swap.RUnlock()
	if len(s.shards) == 1 {
		return s.shards[0].AddDomains(names, seen, seeded)
	}
	by := make([][]string, len(s.shards))
	for _, n := range names {
		i := s.router.Of(n)
		by[i] = append(by[i], n)
	}
	return parallel(len(s.shards), func(i int) error {
		if len(by[i]) == 0 {
			return nil
		}
		return s.shards[i].AddDomains(by[i], seen, seeded)
	})
}

// RecordShard records visits of shard i's domains in one transaction of
// that shard (graph.Store.RecordVisits): the crawl's recorder batches per
// shard and calls it from several goroutines, so that shards commit in
// parallel. A visit of another shard's domain is refused (a VisitError).
func (s *Store) RecordShard(i int, vs []*data.VisitResult) error {
	s.swap.RLock()
	defer s.swap.RUnlock()
	if len(s.shards) > 1 {
		for j, v := range vs {
			if v != nil && s.router.Of(v.Domain) != i {
				return &graph.VisitError{Index: j, Domain: v.Domain,
					Err: fmt.Errorf("belongs to shard %d, not %d", s.router.Of(v.Domain), i)}
			}
		}
	}
	return s.shards[i].RecordVisits(vs)
}

// RecordVisits records visits, each in its own domain's shard: one
// transaction per shard, the shards in parallel. It is not atomic across
// shards: after an error, the other shards' visits may be committed. A
// *graph.VisitError's Index is into vs. (The crawl records per shard,
// RecordShard; this is for tools and tests.)
func (s *Store) RecordVisits(vs []*data.VisitResult) error {
	if len(s.shards) == 1 {
		return s.shards[0].RecordVisits(vs)
	}
	by := make([][]*data.VisitResult, len(s.shards))
	at := make([][]int, len(s.shards))
	for j, v := range vs {
		i := 0
		if v != nil {
			i = s.router.Of(v.Domain)
		}
		by[i] = append(by[i], v)
		at[i] = append(at[i], j)
	}
	return parallel(len(s.shards), func(i int) error {
		if len(by[i]) == 0 {
			return nil
		}
		err := s.shards[i].RecordVisits(by[i])
		var ve *graph.VisitError
		if errors.As(err, &ve) && ve.Index >= 0 && ve.Index < len(at[i]) {
			return &graph.VisitError{Index: at[i][ve.Index], Domain: ve.Domain, Err: ve.Err}
		}
		return err
	})
}

// RemoveDomain removes a domain from every shard (graph.Store.RemoveDomain:
// its own record and visits in its shard, links to it and references in
// all). Shards are done in parallel; after an error some shards may
// already have it on their removal list: calling RemoveDomain again
// finishes the others.
func (s *Store) RemoveDomain(name, reason, proof string, at time.Time) error {
	return parallel(len(s.shards), func(i int) error {
		return s.shards[i].RemoveDomain(name, reason, proof, at)
	})
}

// EnsureVerified checks every shard's tables (graph.Store.EnsureVerified).
func (s *Store) EnsureVerified() error {
	return parallel(len(s.shards), func(i int) error { return s.shards[i].EnsureVerified() })
}

// GC runs every shard's value-log GC.
func (s *Store) GC() error {
	return parallel(len(s.shards), func(i int) error { return s.shards[i].GC() })
}

// Snapshot opens a view of every shard (graph.Store.Snapshot), one after
// the other at one moment: each view is consistent within its shard (a
// visit, which one shard holds, is wholly in it or out); across shards
// they are taken microseconds apart, so a link target's own shard may show
// it a visit later or earlier than the shard that links to it. Close it.
func (s *Store) Snapshot() (*Snapshot, error) {
	sn := &Snapshot{views: make([]*graph.Snapshot, len(s.shards))}
	for i, sh := range s.shards {
		v, err := sh.Snapshot()
		if err != nil {
			sn.Close()
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		sn.views[i] = v
	}
	return sn, nil
}

// Snapshot is a view of every shard of a store.
type Snapshot struct {
	views []*graph.Snapshot
}

// Shards is K.
func (sn *Snapshot) Shards() int { return len(sn.views) }

// Shard is shard i's view.
func (sn *Snapshot) Shard(i int) *graph.Snapshot { return sn.views[i] }

// Close releases every view.
func (sn *Snapshot) Close() error {
	for _, v := range sn.views {
		if v != nil {
			v.Close()
		}
	}
	return nil
}

// One is the store of one shard (today's layout) over g, opened by the
// caller: for tools and tests that open a graph.Store themselves. Closing
// it closes g.
func One(g *graph.Store) *Store {
	return &Store{dir: g.Dir(), router: MustRouter(1, nil), plain: true, shards: []*graph.Store{g}}
}
