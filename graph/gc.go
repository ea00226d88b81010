package graph

import (
	"errors"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The store's upkeep: what keeps a store that is rewritten on every revisit
// from growing without bound.
//
//   - Records up to 32 KiB (states, visits, most edge sets) live in the LSM
//     tree, where compaction drops the versions a revisit replaced. Badger
//     merges level 0 into the rest only once five level-0 tables pile up,
//     and every Close leaves one (the memtable flushed), so a store that is
//     opened for one crawl at a time would carry up to four crawls' worth
//     of stale versions. Close therefore compacts level 0 (Badger's
//     CompactL0OnClose): the cost is one merge of at most a few memtables
//     into the base level, paid once per crawl. (Not for a fleet node's
//     shards, GCOptions.NoCloseCompaction: a node opens and closes them
//     as it takes and gives them up, and their compactors run while they
//     are held.)
//   - The visit log keeps a domain's visits of the Options.VisitHistory
//     before its latest (trim.go): every pass drops older ones first.
//   - The edge sets of the few huge sources go to the value log, which only
//     value-log GC reclaims: a background loop runs it every
//     GCOptions.Interval while the store is open for writing, and Close runs
//     it once more.

// DefaultGCInterval is how often a writable store runs value-log GC.
const DefaultGCInterval = 10 * time.Minute

// gcDiscardRatio: a value-log file is rewritten once half of it is garbage
// (Badger's recommended ratio; lower rewrites more live data per byte won).
const gcDiscardRatio = 0.5

// GCOptions configure the store's upkeep (Options.GC).
type GCOptions struct {
	// Interval between value-log GC passes while the store is open for
	// writing: 0 means DefaultGCInterval, negative turns the background
	// loop off (Close still collects).
	Interval time.Duration
	// NewTicker makes the loop's ticker (tests inject one); nil: a
	// time.Ticker.
	NewTicker func(d time.Duration) Ticker
	// ValueLogFileSize is the size of one value-log file; 0 means Badger's
	// default (1 GiB). Value-log GC rewrites whole files and never the one
	// being written, so tests use small files.
	ValueLogFileSize int64
	// NoCloseCompaction: Close does not compact level 0 (see above). For
	// a store opened only to be marked and closed (package shard makes
	// each new shard so), which holds one key and no stale version: the
	// compaction would write its one table again, and at 64 shards the
	// two table builds' buffers (7 MiB each) were most of what making a
	// store allocated.
	NoCloseCompaction bool

	// afterPass, in tests, hears of every pass of the loop.
	afterPass func(rewrites int, err error)
	// tune, in tests, adjusts Badger's options last (small memtables, so
	// that compaction and GC happen in a small test).
	tune func(badger.Options) badger.Options
}

// Ticker is the part of *time.Ticker the GC loop uses.
type Ticker interface {
	C() <-chan time.Time
	Stop()
}

type timeTicker struct{ t *time.Ticker }

func (t timeTicker) C() <-chan time.Time { return t.t.C }
func (t timeTicker) Stop()               { t.t.Stop() }

// badgerOptions applies the upkeep settings to Badger's options.
func (o GCOptions) badgerOptions(bo badger.Options) badger.Options {
	bo = bo.WithCompactL0OnClose(!o.NoCloseCompaction)
	if o.ValueLogFileSize > 0 {
		bo = bo.WithValueLogFileSize(o.ValueLogFileSize)
	}
	if o.tune != nil {
		bo = o.tune(bo)
	}
	return bo
}

// gcLoop is the background value-log GC of one open store.
type gcLoop struct {
	s    *Store
	opts GCOptions
	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// startGC starts the background GC of a writable store on disk; nil (a
// valid, idle loop) for read-only and in-memory stores.
func startGC(s *Store, o Options) *gcLoop {
	if o.ReadOnly || o.InMemory {
		return nil
	}
	g := &gcLoop{s: s, opts: o.GC, stop: make(chan struct{}), done: make(chan struct{})}
	if o.GC.Interval < 0 {
		close(g.done)
		return g
	}
	interval := o.GC.Interval
	if interval == 0 {
		interval = DefaultGCInterval
	}
	var t Ticker
	if o.GC.NewTicker != nil {
		t = o.GC.NewTicker(interval)
	} else {
		t = timeTicker{time.NewTicker(interval)}
	}
	go g.run(t)
	return g
}

func (g *gcLoop) run(t Ticker) {
	defer close(g.done)
	defer t.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-t.C():
			g.pass(false)
		}
	}
}

// pass trims the visit log (trim.go), then runs value-log GC until a run
// rewrites nothing. locked says the caller holds the writer lock (Close).
// Errors are logged, not fatal: the store works on, only larger.
func (g *gcLoop) pass(locked bool) {
	if n, err := g.s.trimVisits(locked); err != nil {
		g.s.log.Warn("visit log trim", "err", err)
	} else if n > 0 {
		g.s.log.Debug("visit log trimmed", "visits_dropped", n)
	}
	n, err := g.s.collect()
	if err != nil {
		g.s.log.Warn("value-log GC", "err", err)
	} else if n > 0 {
		g.s.log.Debug("value-log GC", "files_rewritten", n)
	}
	if g.opts.afterPass != nil {
		g.opts.afterPass(n, err)
	}
}

// close stops the loop, waits for a pass under way, and collects once more
// before the store closes (Badger then compacts level 0 as it closes).
func (g *gcLoop) close() {
	if g == nil {
		return
	}
	g.once.Do(func() {
		close(g.stop)
		<-g.done
		g.pass(true)
		// An empty read at the newest version tells Badger that no reader
		// needs anything older (its watermark of finished reads otherwise
		// lags one commit behind), so that the level-0 compaction of Close
		// drops the versions this session replaced rather than keep them
		// until the next one.
		if err := g.s.db.View(func(*badger.Txn) error { return nil }); err != nil {
			g.s.log.Warn("before compaction", "err", err)
		}
	})
}

// collect runs value-log GC until a run rewrites nothing, returning how
// many files it rewrote.
func (s *Store) collect() (int, error) {
	n := 0
	for {
		err := s.db.RunValueLogGC(gcDiscardRatio)
		switch {
		case err == nil:
			n++
		case isNothingToCollect(err):
			return n, nil
		default:
			return n, err
		}
	}
}

// isNothingToCollect: no file had enough garbage, or another GC run is
// under way, or the store is in memory.
func isNothingToCollect(err error) bool {
	return errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrRejected) ||
		errors.Is(err, badger.ErrGCInMemoryMode)
}
