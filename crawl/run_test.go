package crawl

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/schedule"
)

func openStore(t *testing.T) *graph.Store {
	t.Helper()
	s, err := graph.Open(t.TempDir(), graph.Options{Create: true, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// smallWeb: a.test → b.test (followed), c.test (nofollow); b.test → d.test.
func smallWeb(t *testing.T) *web {
	w := newWeb(t)
	w.html("a.test/", htmlPage("https://b.test/", `https://c.test/" rel="nofollow`))
	w.html("b.test/", htmlPage("https://d.test/"))
	w.html("c.test/", htmlPage("https://e.test/"))
	w.html("d.test/", htmlPage())
	return w
}

func visited(t *testing.T, s Store, names ...string) map[string]bool {
	out := map[string]bool{}
	for _, n := range names {
		st, ok, err := s.Domain(n)
		if err != nil {
			t.Fatal(err)
		}
		out[n] = ok && st.Visited()
	}
	return out
}

func TestRunSeedsThenFound(t *testing.T) {
	w := smallWeb(t)
	store := openStore(t)
	opts := w.options()
	opts.Seeds = []string{writeFile(t, "seeds.txt", "# seeds\nhttps://a.test/some/page  # a comment\n\nnot a domain\n")}
	opts.UntilIdle = true
	stats, err := Run(context.Background(), store, opts)
	if err != nil {
		t.Fatal(err)
	}
	got := visited(t, store, "a.test", "b.test", "c.test", "d.test", "e.test")
	want := map[string]bool{"a.test": true, "b.test": true, "c.test": false, "d.test": true, "e.test": false}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s visited %v, want %v", k, got[k], v)
		}
	}
	if stats.Visits != 3 || stats.Outcomes[data.OutcomeOK] != 3 || stats.Seeds != 1 {
		t.Errorf("stats %+v", stats)
	}
	// c.test is known (a nofollow edge) but was not visited.
	if _, ok, _ := store.Domain("c.test"); !ok {
		t.Error("c.test unknown to the store")
	}
	sn, err := store.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	names := map[uint32]string{}
	sn.Domains(func(d *data.DomainState) error { names[d.ID] = d.Name; return nil })
	var edges []string
	sn.Edges(func(e *data.EdgeRecord) error {
		s := names[e.SrcID] + ">" + names[e.DstID]
		if e.Nofollow {
			s += " nofollow"
		}
		edges = append(edges, s)
		return nil
	})
	if strings.Join(edges, ",") != "a.test>b.test,a.test>c.test nofollow,b.test>d.test" {
		t.Errorf("edges %v", edges)
	}
}

func TestRunExcludeMaxSitesMinInDomains(t *testing.T) {
	w := smallWeb(t)
	seeds := writeFile(t, "seeds.txt", "a.test\n")
	for _, tc := range []struct {
		name   string
		change func(*Options)
		want   map[string]bool
	}{
		{"exclude", func(o *Options) { o.Exclude = []string{writeFile(t, "ex.txt", "b.test\n")} },
			map[string]bool{"a.test": true, "b.test": false, "d.test": false}},
		{"max-sites", func(o *Options) { o.MaxSites = 2 },
			map[string]bool{"a.test": true, "b.test": true, "d.test": false}},
		{"min-in-domains", func(o *Options) { o.MinInDomains = 2 },
			map[string]bool{"a.test": true, "b.test": false, "d.test": false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openStore(t)
			opts := w.options()
			opts.Seeds = []string{seeds}
			opts.UntilIdle = true
			tc.change(&opts)
			if _, err := Run(context.Background(), store, opts); err != nil {
				t.Fatal(err)
			}
			got := visited(t, store, "a.test", "b.test", "d.test")
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("%s visited %v, want %v", k, got[k], v)
				}
			}
		})
	}
}

// TestRunRefusesBadTiers: a tier table that is not usable stops the crawl
// before any visit (an empty one has no lowest tier for first visits).
func TestRunRefusesBadTiers(t *testing.T) {
	w := smallWeb(t)
	store := openStore(t)
	opts := w.options()
	opts.Seeds = []string{writeFile(t, "seeds.txt", "a.test\n")}
	opts.UntilIdle = true
	for _, tiers := range []schedule.Tiers{{}, {{Number: 1, MaxRank: 10, RevisitDays: 1, Pages: 1}}} {
		opts.Tiers = tiers
		if stats, err := Run(context.Background(), store, opts); err == nil || stats.Visits != 0 {
			t.Errorf("tiers %v: %+v, %v; want an error and no visit", tiers, stats, err)
		}
	}
}

func TestRunCancelledRecordsNothing(t *testing.T) {
	w := smallWeb(t)
	store := openStore(t)
	opts := w.options()
	opts.Seeds = []string{writeFile(t, "seeds.txt", "a.test\n")}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stats, err := Run(ctx, store, opts)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Visits != 0 || visited(t, store, "a.test")["a.test"] {
		t.Fatalf("recorded after cancel: %+v", stats)
	}
}

func TestRunCreatesKeyAndSigns(t *testing.T) {
	w := smallWeb(t)
	store := openStore(t)
	opts := w.options()
	opts.Sign = nil
	opts.KeysDir = filepath.Join(t.TempDir(), "keys")
	opts.Seeds = []string{writeFile(t, "seeds.txt", "d.test\n")}
	opts.UntilIdle = true
	var progress strings.Builder
	opts.Progress = &progress
	if _, err := Run(context.Background(), store, opts); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(progress.String(), "created a signing key in "+opts.KeysDir) {
		t.Errorf("no word of the new key: %q", progress.String())
	}
	ents, _ := os.ReadDir(opts.KeysDir)
	if len(ents) == 0 {
		t.Fatal("no key written")
	}
	for _, r := range w.requests() {
		if strings.HasSuffix(r, "UNSIGNED") {
			t.Errorf("unsigned: %s", r)
		}
	}
}

func TestRunNeedsASigner(t *testing.T) {
	opts := Options{}
	if _, err := Run(context.Background(), openStore(t), opts); err == nil {
		t.Fatal("ran without a signer")
	}
}

func TestReadDomainList(t *testing.T) {
	p := writeFile(t, "l.txt", "A.Test\nhttps://www.a.test/x\n# c\n  b.test # x\n127.0.0.1\n")
	ds, bad, err := ReadDomainList(p, domain.Normalize)
	if err != nil || strings.Join(ds, ",") != "a.test,b.test" || len(bad) != 1 {
		t.Fatalf("%v %v %v", ds, bad, err)
	}
}

func TestRunWaitsWhenIdleAndStopsOnCancel(t *testing.T) {
	w := smallWeb(t)
	store := openStore(t)
	opts := w.options()
	fc := clockwork.NewFakeClock()
	opts.Clock = fc
	opts.Seeds = []string{writeFile(t, "seeds.txt", "a.test\n")}
	var logBuf lockedBuffer
	opts.Logger = slog.New(slog.NewTextHandler(&logBuf, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		stats Stats
		err   error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Run(ctx, store, opts)
		done <- result{s, err}
	}()
	// Nothing is left to visit: the loop waits on its re-check timer.
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fc.Advance(time.Minute) // re-reads the (absent) schedule, waits again
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	r := <-done
	if r.err != nil || r.stats.Visits != 3 {
		t.Fatalf("%+v %v", r.stats, r.err)
	}
	// One "crawl idle" line for the idle spell, saying why.
	logs := logBuf.String()
	if n := strings.Count(logs, "crawl idle"); n != 1 || !strings.Contains(logs, "no schedule yet") {
		t.Errorf("%d idle lines in\n%s", n, logs)
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRunFollowsTheSchedule(t *testing.T) {
	w := newWeb(t)
	w.html("due.test/", htmlPage("/1", "/2", "/3"))
	w.html("due.test", htmlPage())
	w.html("later.test/", htmlPage())
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	rows := []data.ScheduleRow{
		{Domain: "due.test", NextVisit: now.Add(-time.Hour), Tier: 1, Pages: 2, Reason: data.ReasonRevisit, Priority: 5},
		{Domain: "later.test", NextVisit: now.Add(time.Hour), Tier: 6, Pages: 8, Reason: data.ReasonNew},
	}
	writeSnapshot(t, dir, "", now, rows)
	sched, _ := currentSnapshot(dir)
	due, err := ReadDue(sched, now)
	if err != nil || len(due) != 1 || due[0].Domain != "due.test" {
		t.Fatalf("due %v %v", due, err)
	}
	store := openStore(t)
	if err := store.AddDomains([]string{"due.test", "later.test"}, now, false); err != nil {
		t.Fatal(err)
	}
	opts := w.options()
	opts.DataDir = dir
	opts.Now = now
	opts.UntilIdle = true
	stats, err := Run(context.Background(), store, opts)
	if err != nil {
		t.Fatal(err)
	}
	// due.test read its row's 2 pages; later.test is not due.
	if stats.Visits != 1 || stats.Pages != 2 || stats.Due != 1 {
		t.Fatalf("%+v", stats)
	}
}
