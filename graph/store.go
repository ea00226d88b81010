// Package graph is the link store: domain ids, edges, link words, per-domain
// crawl state and the visit log, kept in an embedded Badger database.
// See FORMAT.md for the key layout.
package graph

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
)

// FormatVersion is the store layout this code writes (FORMAT.md). It reads
// versions 1 and 2 too (version 1 lacks the record's FollowedIn flag,
// version 2 records a retry time rather than the server's Retry-After),
// and marks such a store version 3 when it opens it for writing.
const FormatVersion = 3

var (
	// ErrLocked: another process has the store open.
	ErrLocked = errors.New("graph: store is locked")
	// ErrFormat: the store was written by a different (newer) layout.
	ErrFormat = errors.New("graph: unsupported store format")
	// ErrRemoved: the domain is on the removal list and never returns.
	ErrRemoved = errors.New("graph: domain was removed at its owner's request")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("graph: store is closed")
	// ErrReadOnly: a write on a store opened read-only.
	ErrReadOnly = errors.New("graph: store is open read-only")
)

// Options configure Open.
type Options struct {
	Logger   *slog.Logger // nil: discard
	InMemory bool         // tests: no files
	ReadOnly bool
	// Create: make a new store when dir holds none. Without it, Open
	// refuses with ErrNoStore, so that a mistyped --data-dir or an unset
	// MAPTHENET_DIR is not a new, empty store (issue 13).
	Create bool
	// NameCache bounds the in-memory name→id cache that spares a database
	// read per link; 0 means DefaultNameCache, negative disables it.
	NameCache int
	// RecordCache is the size in bytes of the cache of recently written
	// domain records (reccache.go); 0 means DefaultRecordCache, negative
	// disables it.
	RecordCache int
	// GC: value-log GC and compaction (gc.go). MinFreeSpace: writes are
	// refused below it (space.go; 0: DefaultMinFreeSpace, negative: off).
	GC           GCOptions
	MinFreeSpace int64
	// VisitHistory: the visit log keeps a domain's visits that started
	// within it of the domain's latest (trim.go); 0 means
	// DefaultVisitHistory, negative keeps all.
	VisitHistory time.Duration
	// MemTableSize and BlockCacheSize, when positive, replace Badger's
	// memtable size (64 MiB here) and block cache (256 MiB): a store that is
	// one of several shards of one machine (package shard) takes a share.
	MemTableSize   int64
	BlockCacheSize int64
	// Compactors, when positive, replaces Badger's 4 compaction
	// goroutines (at least 2: Badger's minimum). Each wakes every 50 ms
	// even when there is nothing to compact, so K shards on one machine
	// share a machine's compactors out (ShareOptions).
	Compactors int
}

// DefaultNameCache is the default bound of the name→id cache (16 Mi
// names). A store whose names all fit needs no database read to learn
// that a name is new, which is most of a new domain's cost otherwise:
// ingest of graphgen's L (10M domains) ran at 71k edges/s with a 1 Mi
// cache and 142k with this one. A name costs about 30 bytes (namecache.go
// keeps a hash of it, not the name). crawl --name-cache lowers it.
const DefaultNameCache = 1 << 24

// Store is an open link store. Its methods are safe for concurrent use:
// writes are serialised by one mutex (which also makes id allocation dense),
// reads run on Badger's own snapshots.
type Store struct {
	db  *badger.DB
	dir string
	log *slog.Logger
	ro  bool

	mu       sync.Mutex // held by every writer
	closed   bool
	inflight *batch              // a RecordVisits batch still committing (pipeline.go)
	ahead    view                // the view the next batch reads through, while inflight
	nextID   uint32              // next id to allocate; committed value is m/nextid
	names    *nameCache          // name→id cache of committed names (namecache.go)
	maxIDs   int                 // bound of ids; 0: no cache
	followed []uint64            // bit per id: FollowedIn is committed true
	rcache   *recordCache        // committed d/ values written lately (reccache.go)
	removed  map[string]struct{} // the removal list's names
	gc       *gcLoop             // background value-log GC (gc.go)
	minFree  int64               // free-space reserve (space.go)
	// visitHistory: the visit log's window (trim.go); 0 keeps all.
	visitHistory time.Duration

	// allIDs: names holds every committed name, so a name it lacks is
	// unknown without a database read (most of a link to a new domain's
	// cost otherwise: the read misses every level). True from a writable
	// Open of a store with at most maxIDs names until the cache first
	// forgets one.
	allIDs bool

	verifiedAt time.Time // when the tables' checksums were last checked (EnsureVerified)

	fence atomic.Pointer[func() error] // checked before every commit (SetFence)
}

// Open opens the store in dir, creating it only with opts.Create. Before
// Badger sees the directory it is checked for damage (integrity.go): a
// damaged store is refused with a *DamageError (ErrDamaged), never opened
// empty or cut short. A panic inside Badger while opening is turned into
// an error too.
func Open(dir string, opts Options) (s *Store, err error) {
	defer recoverBadger(&err, dir)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bo := badger.DefaultOptions(dir).
		WithLogger(badgerLogger{log}).
		WithMetricsEnabled(false).
		// One version: history lives in the visit log, not in old values.
		WithNumVersionsToKeep(1).
		// Link words and names repeat endlessly: blocks compress well.
		// Snappy rather than ZSTD: compaction runs beside ingest on few
		// cores, and ZSTD cost a fifth of the CPU in BenchmarkRecordVisits.
		WithCompression(options.Snappy).
		// States, visits and most edge sets are well under 32 KiB and stay
		// in the LSM tree, where compaction drops their old versions; only
		// the edge sets of the few huge sources go to the value log, which
		// GC reclaims.
		WithValueThreshold(32 << 10).
		// One writer at a time (s.mu): Badger's conflict tracking would be
		// pure overhead.
		WithDetectConflicts(false).
		// Badger's 64 MiB memtables. 32 MiB ones were faster while reads
		// of domain records searched them; since the record cache spares
		// most reads, bigger ones win, by flushing and compacting less
		// (bench -size M -stages ingest, two runs each: 32 MiB 414k and
		// 460k edges/s for 52.5 and 50.2 CPU-s; 64 MiB 459k and 466k for
		// 47.3 and 44.4; 128 MiB no better). A transaction may hold 15% of
		// one.
		WithMemTableSize(64 << 20).
		// Durable when acknowledged: a commit returns once its write-ahead
		// (and value) log is synced, so a visit logged as recorded survives
		// a power loss too, not only a killed process. The recorder's
		// batches amortise the sync: bench -size M -stages ingest, back to
		// back on a shared 2-core box, 170k edges/s (58.6 s, 38.9 CPU-s)
		// without it, 120k (83.6 s, 40.6 CPU-s) with it: little CPU, but
		// the commit waits for the disk. (Not SyncWrites off plus DB.Sync
		// after each commit, overlapped with the next: Badger does not
		// sync a memtable's log when it rotates it, so a batch in the
		// rotated one would be logged as recorded unsynced.)
		WithSyncWrites(true).
		// Checksums: every block read from a table and every value read
		// from the value log is verified; a bad one is an error, not a
		// wrong value. Not OnTableAndBlockRead: it verifies on open in
		// Badger's own goroutines, which panic on a bad table where no
		// caller can recover; Open verifies the tables on this goroutine
		// instead (verifyTables).
		WithChecksumVerificationMode(options.OnBlockRead).
		WithVerifyValueChecksum(true).
		WithReadOnly(opts.ReadOnly)
	if opts.MemTableSize > 0 {
		bo = bo.WithMemTableSize(opts.MemTableSize)
	}
	if opts.BlockCacheSize > 0 {
		bo = bo.WithBlockCacheSize(opts.BlockCacheSize)
	}
	if opts.Compactors > 0 {
		bo = bo.WithNumCompactors(max(2, opts.Compactors))
	}
	bo = opts.GC.badgerOptions(bo)
	if opts.InMemory {
		bo = bo.WithInMemory(true).WithDir("").WithValueDir("")
	} else {
		exists, err := preOpen(dir, bo, opts.ReadOnly, log)
		if err != nil {
			return nil, err
		}
		if !exists && (!opts.Create || opts.ReadOnly) {
			return nil, fmt.Errorf("%w at %s", ErrNoStore, dir)
		}
		if !opts.ReadOnly {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("graph: create store directory: %w", err)
			}
			if err := checkFree(dir, minFree(opts)); err != nil {
				return nil, err
			}
		}
	}
	db, err := badger.Open(bo)
	if err != nil {
		// Badger flattens the flock error into text, so match its words.
		if strings.Contains(err.Error(), "Cannot acquire directory lock") {
			return nil, fmt.Errorf("%w: another process (a running crawl?) holds the store at %s", ErrLocked, dir)
		}
		if d := asDamage(err, dir); d != nil {
			return nil, d
		}
		return nil, fmt.Errorf("graph: open store at %s: %w%s", dir, err, uncleanHint(err, opts.ReadOnly))
	}
	s = &Store{db: db, dir: dir, log: log, ro: opts.ReadOnly, removed: map[string]struct{}{}, minFree: minFree(opts),
		visitHistory: visitHistory(opts)}
	if !opts.InMemory {
		s.verifiedAt = time.Now()
	} else {
		s.dir = ""
	}
	switch {
	case opts.NameCache == 0:
		s.maxIDs = DefaultNameCache
	case opts.NameCache > 0:
		s.maxIDs = opts.NameCache
	}
	if s.maxIDs > 0 {
		s.names = newNameCache(s.maxIDs)
	}
	if !s.ro {
		switch {
		case opts.RecordCache == 0:
			s.rcache = newRecordCache(DefaultRecordCache)
		case opts.RecordCache > 0:
			s.rcache = newRecordCache(opts.RecordCache)
		}
	}
	if err := s.load(); err != nil {
		db.Close()
		return nil, fmt.Errorf("graph: open store at %s: %w", dir, err)
	}
	if !s.ro {
		if err := s.finishRemovals(); err != nil {
			db.Close()
			return nil, fmt.Errorf("graph: open store at %s: finish an interrupted removal: %w", dir, err)
		}
		if err := s.loadNames(); err != nil {
			// Only a speed-up lost: lookups read the database.
			log.Warn("graph: could not load the domain names into the cache", "err", err)
		}
	}
	s.gc = startGC(s, opts)
	return s, nil
}

// loadNames fills the name cache with every name when they all fit (see
// allIDs): a key-only scan of n/, about a second for a million names,
// which a crawl soon repays.
func (s *Store) loadNames() error {
	if s.names == nil || int64(s.nextID) > int64(s.maxIDs) {
		return nil
	}
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixName), PrefetchValues: false})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			err := item.Value(func(v []byte) error {
				if len(v) != 4 {
					return fmt.Errorf("%w: id of name %q", errCorrupt, item.Key()[len(prefixName):])
				}
				s.names.putKey(item.Key()[len(prefixName):], binary.BigEndian.Uint32(v))
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.names.clear()
		return err
	}
	s.allIDs = s.names.len() <= s.maxIDs
	return nil
}

// load checks the format version (writing it into a new store) and reads
// the id counter and the removal list.
func (s *Store) load() error {
	var fresh, upgrade bool
	err := s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keyFormat)
		if errors.Is(err, badger.ErrKeyNotFound) {
			it := txn.NewIterator(badger.IteratorOptions{})
			defer it.Close()
			it.Rewind()
			if it.Valid() {
				return fmt.Errorf("%w: no format key: not a mapthenet link store", ErrFormat)
			}
			fresh = true
			return nil
		}
		if err != nil {
			return err
		}
		var v uint64
		if err := item.Value(func(b []byte) error {
			var n int
			v, n = binary.Uvarint(b)
			if n <= 0 || n != len(b) {
				return fmt.Errorf("%w: unreadable format key", ErrFormat)
			}
			return nil
		}); err != nil {
			return err
		}
		if v < 1 || v > FormatVersion {
			return fmt.Errorf("%w: the store has format version %d, this program reads versions 1 to %d (a newer mapthenet wrote it?)", ErrFormat, v, FormatVersion)
		}
		upgrade = v < FormatVersion && !s.ro
		if s.nextID, err = readNextID(txn); err != nil {
			return err
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixRemoved)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			s.removed[string(it.Item().Key()[len(prefixRemoved):])] = struct{}{}
		}
		return nil
	})
	if err != nil || !(fresh || upgrade) || s.ro {
		return err
	}
	return s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(keyFormat, binary.AppendUvarint(nil, FormatVersion))
	})
}

func readNextID(txn *badger.Txn) (uint32, error) {
	item, err := txn.Get(keyNextID)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var id uint64
	err = item.Value(func(b []byte) error {
		var n int
		id, n = binary.Uvarint(b)
		if n <= 0 || id > 1<<32 {
			return fmt.Errorf("%w: id counter", errCorrupt)
		}
		return nil
	})
	return uint32(id), err
}

// Close flushes and closes the store. Close open snapshots first.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.drain()
	s.closed = true
	s.gc.close()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("graph: close store at %s: %w", s.dir, err)
	}
	return nil
}

// lockWrite takes the writer mutex with no batch in flight (pipeline.go),
// refusing on a closed or read-only store.
func (s *Store) lockWrite() error {
	if err := s.lockOpen(); err != nil {
		return err
	}
	s.drain()
	return nil
}

// lockOpen takes the writer mutex, refusing on a closed or read-only
// store; a pipelined batch may still be committing. A store whose fence
// refuses is refused with the fence's error first: a fleet node keeps the
// shards it does not hold open read-only (package shard), and a write to
// one of them is a write to a shard not held (ErrFenced, which the crawl
// drops and makes again where the shard is held), not a broken store.
func (s *Store) lockOpen() error {
	s.mu.Lock()
	if s.closed || s.ro {
		err := s.checkFence()
		switch {
		case err != nil:
		case s.closed:
			err = ErrClosed
		default:
			err = ErrReadOnly
		}
		s.mu.Unlock()
		return err
	}
	if err := s.checkSpace(); err != nil {
		s.mu.Unlock()
		return err
	}
	return nil
}

// GC runs Badger's value-log GC until a pass rewrites nothing, so that the
// edge sets every revisit replaces do not pile up on disk. A writable store
// runs it by itself every GCOptions.Interval and on Close (gc.go).
func (s *Store) GC() error {
	if s.ro {
		return nil
	}
	for {
		err := s.db.RunValueLogGC(0.5)
		switch {
		case err == nil:
			continue
		case errors.Is(err, badger.ErrNoRewrite), errors.Is(err, badger.ErrRejected),
			errors.Is(err, badger.ErrGCInMemoryMode):
			return nil
		default:
			return fmt.Errorf("graph: value log GC: %w", err)
		}
	}
}

// AddDomains records names (registrable domains) as known, never-visited
// domains first seen at seen; known ones are left as they are, except that
// seeded marks them as seeds. Names must be normalised (domain.Normalize); removed
// domains are skipped. Large lists are written in several transactions.
func (s *Store) AddDomains(names []string, seen time.Time, seeded bool) error {
	for _, n := range names {
		if err := domain.Check(n); err != nil {
			return err
		}
	}
	if err := s.lockWrite(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	const chunk = 10_000
	for len(names) > 0 {
		part := names[:min(chunk, len(names))]
		names = names[len(part):]
		err := s.write(func(b *batch) error {
			for _, n := range part {
				if _, gone := s.removed[n]; gone {
					continue
				}
				id, _, err := b.lookupOrCreate(n, seen)
				if err != nil {
					return err
				}
				if seeded {
					st, err := b.state(id)
					if err != nil {
						return err
					}
					if !st.Seeded {
						st.Seeded = true
						b.dirty[id] = struct{}{}
					}
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Domain returns the state of one domain.
func (s *Store) Domain(name string) (data.DomainState, bool, error) {
	var st data.DomainState
	var found bool
	err := s.db.View(func(txn *badger.Txn) error {
		id, ok, err := getID(txn, name)
		if err != nil || !ok {
			return err
		}
		found, err = getState(txn, id, &st)
		return err
	})
	return st, found, err
}

// DomainByID returns the state of the domain with the given id.
func (s *Store) DomainByID(id uint32) (data.DomainState, bool, error) {
	var st data.DomainState
	var found bool
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		found, err = getState(txn, id, &st)
		return err
	})
	return st, found, err
}

// IsRemoved reports whether name is on the removal list.
func (s *Store) IsRemoved(name string) (bool, error) {
	var found bool
	err := s.db.View(func(txn *badger.Txn) error {
		_, err := txn.Get(removedKey(name))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		found = err == nil
		return err
	})
	return found, err
}

// Removals lists the removal list in name order.
func (s *Store) Removals() ([]Removal, error) {
	var out []Removal
	err := s.db.View(func(txn *badger.Txn) error {
		return eachRemoval(txn, func(r Removal) error {
			out = append(out, r)
			return nil
		})
	})
	return out, err
}

func getID(txn *badger.Txn, name string) (uint32, bool, error) {
	item, err := txn.Get(nameKey(name))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	var id uint32
	err = item.Value(func(b []byte) error {
		if len(b) != 4 {
			return fmt.Errorf("%w: id of %q", errCorrupt, name)
		}
		id = binary.BigEndian.Uint32(b)
		return nil
	})
	return id, err == nil, err
}

// getState reads a domain's whole state, FollowedIn included.
func getState(txn *badger.Txn, id uint32, st *data.DomainState) (bool, error) {
	found, err := getStateOnly(txn, id, st)
	if err != nil || !found {
		return found, err
	}
	_, err = txn.Get(idKey(prefixFollow, id))
	switch {
	case err == nil:
		st.FollowedIn = true
	case !errors.Is(err, badger.ErrKeyNotFound):
		return false, err
	}
	return true, nil
}

// getStateOnly reads the d/<id> value: all but FollowedIn.
func getStateOnly(txn *badger.Txn, id uint32, st *data.DomainState) (bool, error) {
	item, err := txn.Get(idKey(prefixDomain, id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = item.Value(func(b []byte) error {
		_, err := decodeDomain(id, b, st)
		return err
	})
	return err == nil, err
}

// badgerLogger routes Badger's messages to slog: errors and warnings as
// such, its chatty progress lines at debug level.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) emit(level slog.Level, format string, args ...any) {
	if !b.l.Enabled(context.Background(), level) {
		return
	}
	b.l.Log(context.Background(), level, strings.TrimSpace(fmt.Sprintf(format, args...)), "component", "badger")
}

func (b badgerLogger) Errorf(f string, a ...any) {
	if strings.HasPrefix(f, "Received err: ") {
		// Open's failure, which Open returns too: one line, not two.
		b.emit(slog.LevelDebug, f, a...)
		return
	}
	b.emit(slog.LevelError, f, a...)
}
func (b badgerLogger) Warningf(f string, a ...any) { b.emit(slog.LevelWarn, f, a...) }
func (b badgerLogger) Infof(f string, a ...any)    { b.emit(slog.LevelDebug, f, a...) }
func (b badgerLogger) Debugf(f string, a ...any)   { b.emit(slog.LevelDebug, f, a...) }

// ReadOnly reports whether the store was opened read-only.
func (s *Store) ReadOnly() bool { return s.ro }

// Dir is the store's directory ("" in memory).
func (s *Store) Dir() string { return s.dir }

// badgerBlockCache is Badger's default block cache (its
// DefaultOptions), which Open keeps unless BlockCacheSize is set.
const badgerBlockCache = 256 << 20

// HeapFloor is the most Go heap a writable store of these options holds
// for itself, however busy: Badger's memtable arena (memtableArena,
// allocated whole when the memtable is made) and the caps
// of the record and block caches, which fill as the store is used. A
// program that bounds its heap (crawl's soft memory limit) must leave
// room for it: a store of 64 shards holds 64 arenas and 128 caches.
func HeapFloor(o Options) int64 {
	mt := o.MemTableSize
	if mt <= 0 {
		mt = 64 << 20
	}
	floor := memtableArena(mt)
	switch {
	case o.RecordCache == 0:
		floor += DefaultRecordCache
	case o.RecordCache > 0:
		floor += int64(o.RecordCache)
	}
	if o.BlockCacheSize > 0 {
		floor += o.BlockCacheSize
	} else {
		floor += badgerBlockCache
	}
	return floor
}

// HeapHeld is the Go heap the store holds for itself now: Badger's
// memtable arena when it is writable (see HeapFloor), and what its
// record cache's ring and Badger's block cache have grown to. Safe from
// any goroutine; a closed store's figure is its last.
func (s *Store) HeapHeld() int64 {
	var held int64
	if !s.ro {
		held += memtableArena(s.db.Opts().MemTableSize)
	}
	if s.rcache != nil {
		held += s.rcache.held.Load()
	}
	if m := s.db.BlockCacheMetrics(); m != nil {
		held += int64(m.CostAdded()) - int64(m.CostEvicted())
	}
	return held
}

// memtableArena is the heap Badger allocates for a memtable of size mt:
// mt plus room for one largest batch (15% of mt) and that batch's nodes,
// about as much again (badger's arenaSize).
func memtableArena(mt int64) int64 { return mt + 2*(mt*15/100) }
