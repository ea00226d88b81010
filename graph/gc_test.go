package graph

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
)

// fakeTicker ticks when the test says so.
type fakeTicker struct {
	c       chan time.Time
	mu      sync.Mutex
	stopped bool
	every   time.Duration
}

func (f *fakeTicker) C() <-chan time.Time { return f.c }
func (f *fakeTicker) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
}

func (f *fakeTicker) isStopped() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stopped
}

type gcPass struct {
	rewrites int
	err      error
}

// gcHarness opens a store whose GC loop ticks on demand and reports its
// passes, with Badger tuned so that a small test makes value-log garbage:
// edge sets over 1 KiB go to the value log, whose files are 1 MiB.
type gcHarness struct {
	dir    string
	ticker *fakeTicker
	passes chan gcPass
}

func newGCHarness(t *testing.T) *gcHarness {
	return &gcHarness{dir: t.TempDir(), passes: make(chan gcPass, 16)}
}

func (h *gcHarness) open(t *testing.T, interval time.Duration) *Store {
	t.Helper()
	h.ticker = &fakeTicker{c: make(chan time.Time)}
	s, err := Open(h.dir, Options{Create: true, GC: GCOptions{
		Interval:         interval,
		NewTicker:        func(d time.Duration) Ticker { h.ticker.every = d; return h.ticker },
		ValueLogFileSize: 1 << 20,
		afterPass:        func(n int, err error) { h.passes <- gcPass{n, err} },
		tune:             func(bo badger.Options) badger.Options { return bo.WithValueThreshold(1 << 10) },
	}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tick runs one pass of the loop and returns what it did.
func (h *gcHarness) tick(t *testing.T) gcPass {
	t.Helper()
	h.ticker.c <- time.Time{}
	return <-h.passes
}

// vlogBytes sums the value-log files' sizes.
func (h *gcHarness) vlogBytes(t *testing.T) (int64, int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(h.dir, "*.vlog"))
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		n += st.Size()
	}
	return n, len(files)
}

// bigVisit is a complete visit whose edge set is some 17 KB: 50 links of
// 16 long words each.
func bigVisit(name string, at time.Time) *data.VisitResult {
	v := visit(name, at, data.OutcomeOK)
	for i := range 50 {
		l := data.Link{Dst: fmt.Sprintf("t%02d.example", i)}
		for w := range data.MaxWordsPerLink {
			l.Words = append(l.Words, strings.Repeat(string(rune('a'+w)), 20))
		}
		v.Links = append(v.Links, l)
	}
	return v
}

// Revisits replace big edge sets in the value log; the background loop's
// passes rewrite the files that became mostly garbage, so the value log
// shrinks back to about one copy of each live edge set.
func TestGCLoopReclaimsValueLog(t *testing.T) {
	h := newGCHarness(t)
	s := h.open(t, time.Minute)
	if h.ticker.every != time.Minute {
		t.Errorf("ticker interval %v, want the configured minute", h.ticker.every)
	}
	const domains, rounds = 4, 80 // 320 edge sets of ~17 KB: ~5 MiB of value log
	for r := range rounds {
		var batch []*data.VisitResult
		for d := range domains {
			batch = append(batch, bigVisit(fmt.Sprintf("big%d.example", d), t0.Add(time.Duration(r)*time.Hour)))
		}
		must(t, s.RecordVisits(batch))
	}
	before, files := h.vlogBytes(t)
	if files < 4 {
		t.Fatalf("%d value-log files (%d bytes): the test wants several to collect", files, before)
	}
	// Nothing is known to be garbage before compaction drops the old
	// versions (Close compacts level 0), so collect after a reopen.
	must(t, s.Close())
	if !h.ticker.isStopped() {
		t.Error("Close left the GC ticker running")
	}
	<-h.passes // Close's own last pass
	s = h.open(t, time.Minute)
	defer s.Close()
	p := h.tick(t)
	if p.err != nil {
		t.Fatalf("GC pass: %v", p.err)
	}
	after, _ := h.vlogBytes(t)
	t.Logf("value log: %d files, %d bytes before; %d files rewritten; %d bytes after", files, before, p.rewrites, after)
	if p.rewrites == 0 || after > before/2 {
		t.Errorf("GC pass rewrote %d files, value log %d -> %d bytes: want most of it reclaimed", p.rewrites, before, after)
	}
	// The live edge sets survived the rewrite.
	for d := range domains {
		name := fmt.Sprintf("big%d.example", d)
		if got := len(edgesOf(t, s, name)); got != 50 {
			t.Errorf("%s: %d edges after GC, want 50", name, got)
		}
	}
	// A second pass finds nothing left to do.
	if p := h.tick(t); p.err != nil || p.rewrites != 0 {
		t.Errorf("second pass: %d rewrites, %v; want none", p.rewrites, p.err)
	}
}

// A negative interval turns the loop off; Close still collects once.
func TestGCLoopOff(t *testing.T) {
	h := newGCHarness(t)
	made := false
	s, err := Open(h.dir, Options{Create: true, GC: GCOptions{
		Interval:  -1,
		NewTicker: func(time.Duration) Ticker { made = true; return &fakeTicker{} },
		afterPass: func(n int, err error) { h.passes <- gcPass{n, err} },
	}})
	must(t, err)
	if made {
		t.Error("a ticker was made with the loop off")
	}
	must(t, s.Close())
	if p := <-h.passes; p.err != nil {
		t.Errorf("Close's pass: %v", p.err)
	}
	must(t, s.Close()) // twice is fine
}

// Read-only and in-memory stores run no loop (and Close copes).
func TestGCLoopOnlyWritableOnDisk(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	must(t, s.Close())
	for name, o := range map[string]Options{"read-only": {ReadOnly: true}, "in memory": {InMemory: true}} {
		o.GC.NewTicker = func(time.Duration) Ticker { t.Errorf("%s: a GC ticker was made", name); return &fakeTicker{} }
		d := dir
		if o.InMemory {
			d = ""
		}
		s, err := Open(d, o)
		must(t, err)
		if s.gc != nil {
			t.Errorf("%s: GC loop started", name)
		}
		must(t, s.Close())
	}
}

// Close compacts level 0, so that the versions a revisit replaced do not
// outlive the crawl that replaced them. Ten rounds of revisits that replace
// every edge set, each round in its own open and close, leave a store about
// the size of one whose revisits changed no edge (partial visits with no
// links): both hold one edge set per domain and ten visits per domain in
// the visit log, which is history and grows by design.
func TestCloseCompactsLevelZero(t *testing.T) {
	round := func(dir string, r int, replace bool) {
		s := openDir(t, dir)
		defer func() { must(t, s.Close()) }()
		var batch []*data.VisitResult
		for d := range 200 {
			name := fmt.Sprintf("d%03d.example", d)
			at := t0.AddDate(0, 0, r)
			if !replace {
				batch = append(batch, visit(name, at, data.OutcomePartial))
				continue
			}
			v := visit(name, at, data.OutcomeOK)
			for i := range 10 {
				v.Links = append(v.Links, link(fmt.Sprintf("d%03d.example", (d*7+i+r+1)%200), "word", fmt.Sprintf("w%d", r)))
			}
			batch = append(batch, v)
		}
		must(t, s.RecordVisits(batch))
	}
	tables := func(dir string) int64 {
		files, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
		var n int64
		for _, f := range files {
			st, err := os.Stat(f)
			must(t, err)
			n += st.Size()
		}
		return n
	}
	revisited, unchanged := t.TempDir(), t.TempDir()
	for r := range 10 {
		round(revisited, r, true)
		round(unchanged, r, r == 0)
	}
	a, b := tables(revisited), tables(unchanged)
	t.Logf("tables after ten rounds: %d bytes with every edge set replaced each round, %d with none", a, b)
	if a > b*6/5 {
		t.Errorf("replaced edge sets left %d bytes of tables, more than 120%% of the %d bytes without replacement", a, b)
	}
}

// With GCOptions.NoCloseCompaction, Close flushes the memtable to a
// level-0 table and leaves it there (package shard's fleet shards: their
// compactors merge level 0 while the shard is held); by default, Close
// compacts it away.
func TestNoCloseCompactionLeavesLevelZero(t *testing.T) {
	for _, keep := range []bool{false, true} {
		dir := t.TempDir()
		s, err := Open(dir, Options{Create: true, GC: GCOptions{NoCloseCompaction: keep}})
		must(t, err)
		must(t, s.RecordVisits([]*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example", "w"))}))
		must(t, s.Close())
		s, err = Open(dir, Options{ReadOnly: true})
		must(t, err)
		l0 := s.db.Levels()[0].NumTables
		must(t, s.Close())
		if keep && l0 != 1 {
			t.Errorf("NoCloseCompaction: %d level-0 tables after a close, want the memtable's 1", l0)
		}
		if !keep && l0 != 0 {
			t.Errorf("default: %d level-0 tables after a close, want 0 (compacted)", l0)
		}
	}
}
