package fleetnode

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/fleet/fleettest"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/shard"
)

// puts is a snapshot store that remembers the keys put to it.
type puts struct {
	objstore.Store
	mu   sync.Mutex
	keys []string
}

func (p *puts) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	p.mu.Lock()
	p.keys = append(p.keys, key)
	p.mu.Unlock()
	return p.Store.Put(ctx, key, r, size)
}

// backups are the backup keys put so far.
func (p *puts) backups() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, k := range p.keys {
		if strings.HasPrefix(k, BackupsPrefix) {
			out = append(out, k)
		}
	}
	return out
}

// node is a Handler over its own store of 2 shards, sharing snaps and
// the fake fleet.
func node(t *testing.T, fake *fleettest.Fake, snaps objstore.Store) *Handler {
	t.Helper()
	dir := t.TempDir()
	st, err := shard.Open(filepath.Join(dir, "store"), shard.Options{Create: true, Shards: 2, ReadOnlyShards: true,
		Graph: graph.Options{NameCache: -1, RecordCache: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := NewHandler(Options{Store: st, Snapshots: snaps, TmpDir: dir})
	h.SetGate(fake)
	return h
}

// snapshotDir is a snapshot store in a directory of the test's own.
func snapshotDir(t *testing.T) *objstore.Dir {
	t.Helper()
	d, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// A clean handoff makes a backup only when something was written to the
// shard since the backup its state names: one restored at the take, or
// made by an export of the same holding.
func TestHandoffBacksUpOnlyAChangedShard(t *testing.T) {
	ctx := context.Background()
	dir := snapshotDir(t)
	snaps := &puts{Store: dir}
	fake := fleettest.New(nil, 0)
	a, b := node(t, fake, snaps), node(t, fake, snaps)
	const s = 0
	n := 0
	write := func(h *Handler) string { // a new domain of shard s
		t.Helper()
		for {
			n++
			if d := fmt.Sprintf("new%d.example", n); h.o.Store.ShardOf(d) == s {
				if err := h.o.Store.AddDomains([]string{d}, time.Now(), false); err != nil {
					t.Fatal(err)
				}
				return d
			}
		}
	}
	want := func(step string, keys ...string) {
		t.Helper()
		if got := snaps.backups(); fmt.Sprint(got) != fmt.Sprint(keys) {
			t.Fatalf("%s: backups put %v, want %v", step, got, keys)
		}
	}
	take := func(h *Handler) fleet.Grant {
		t.Helper()
		g, err := fake.Grant(ctx, h, s, 0)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	give := func(h *Handler) {
		t.Helper()
		// As a node gives a shard up: still held while Stop runs (its
		// state is recorded), then the fake's holding ends (its Stop,
		// of a shard no longer held, does nothing).
		h.Stop(s, false)
		fake.Take(h, s, true)
	}

	take(a) // token 1
	write(a)
	if _, err := fake.Export(ctx, a, fleet.ExportRequest{ID: "r1", Dest: "parts/r1/"}, s); err != nil {
		t.Fatal(err)
	}
	want("after an export", BackupKey(s, 1))
	give(a)
	want("a handoff with nothing written since the export", BackupKey(s, 1))

	take(b) // token 2: b restores a's backup
	give(b)
	want("a handoff of a restored shard left as it was", BackupKey(s, 1))

	take(b) // token 3: b's copy has token 2, the state's is 1: restored again
	added := write(b)
	give(b)
	want("a handoff after a write", BackupKey(s, 1), BackupKey(s, 3))

	take(a) // token 4: restores b's backup of token 3
	if _, found, err := a.o.Store.Domain(added); err != nil || !found {
		t.Fatalf("the domain b added is not in a's copy after the take (found %v, %v)", found, err)
	}
	give(a)
	want("a handoff of the restored shard", BackupKey(s, 1), BackupKey(s, 3))
}

// A node writes only the shards it holds: the others are open read-only
// (no compactors, memtables or logs of theirs run), a shard is writable
// from its take to its give-up, and a write to a shard not held fails with
// the fence's error (which the crawl drops), not graph.ErrReadOnly (which
// stops it).
func TestOnlyHeldShardsAreWritable(t *testing.T) {
	ctx := context.Background()
	snaps := snapshotDir(t)
	fake := fleettest.New(nil, 0)
	h := node(t, fake, snaps)
	st := h.o.Store
	writable := func() []int {
		var out []int
		for i := range st.Shards() {
			if st.Writable(i) {
				out = append(out, i)
			}
		}
		return out
	}
	name := func(s int) string {
		for n := 0; ; n++ {
			if d := fmt.Sprintf("site%d.example", n); st.ShardOf(d) == s {
				return d
			}
		}
	}
	visit := func(s int) error {
		at := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
		return st.RecordShard(s, []*data.VisitResult{{Domain: name(s), StartedAt: at, FinishedAt: at.Add(time.Second),
			RobotsReadAt: at, RobotsStatus: 404, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 1, Complete: true}})
	}
	notHeld := func(step string, s int) {
		t.Helper()
		if err := visit(s); !errors.Is(err, graph.ErrFenced) || !errors.Is(err, fleet.ErrNotOwner) {
			t.Errorf("%s: a visit of shard %d, not held: %v, want graph.ErrFenced wrapping fleet.ErrNotOwner", step, s, err)
		}
	}
	if w := writable(); len(w) != 0 {
		t.Errorf("shards %v writable before the node took any", w)
	}
	notHeld("before a take", 0)
	if _, err := fake.Grant(ctx, h, 1, 0); err != nil {
		t.Fatal(err)
	}
	if w := writable(); !slices.Equal(w, []int{1}) {
		t.Errorf("writable shards %v while the node holds shard 1", w)
	}
	notHeld("while holding shard 1", 0)
	if err := visit(1); err != nil {
		t.Errorf("a visit of the held shard: %v", err)
	}
	h.Stop(1, false)
	fake.Take(h, 1, true)
	if w := writable(); len(w) != 0 {
		t.Errorf("shards %v writable after the node gave its shard up", w)
	}
	notHeld("after the give-up", 1)
	if got, found, err := st.Domain(name(1)); err != nil || !found || !got.Visited() {
		t.Errorf("the held shard's visit, read-only after the give-up: found %v, %v", found, err)
	}
}

// Once the node is Leaving, a shard it gives up is closed rather than
// opened read-only again (the process closes the store next): what the
// holding wrote is on disk all the same.
func TestLeavingClosesShardsGivenUp(t *testing.T) {
	ctx := context.Background()
	snaps := snapshotDir(t)
	fake := fleettest.New(nil, 0)
	h := node(t, fake, snaps)
	st := h.o.Store
	for s := range 2 {
		if _, err := fake.Grant(ctx, h, s, 0); err != nil {
			t.Fatal(err)
		}
	}
	var d string
	for n := 0; d == ""; n++ {
		if c := fmt.Sprintf("site%d.example", n); st.ShardOf(c) == 1 {
			d = c
		}
	}
	at := time.Date(2026, 12, 4, 20, 0, 0, 0, time.UTC)
	if err := st.RecordShard(1, []*data.VisitResult{{Domain: d, StartedAt: at, FinishedAt: at.Add(time.Second),
		RobotsReadAt: at, RobotsStatus: 404, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 1, Complete: true}}); err != nil {
		t.Fatal(err)
	}
	h.Stop(0, false) // before Leaving: read-only again
	if _, _, err := st.Domain(d); err != nil {
		t.Fatalf("shard 1, still held: %v", err)
	}
	h.Leaving()
	h.Stop(1, false)
	if _, _, err := st.Shard(0).Domain("x.example"); err != nil {
		t.Errorf("shard 0, given up before Leaving, is not open read-only: %v", err)
	}
	if _, _, err := st.Domain(d); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("shard 1, given up while Leaving: a read gave %v, want graph.ErrClosed (closed, not reopened)", err)
	}
	if err := st.SetWritable(1, false); err != nil {
		t.Fatal(err)
	}
	if got, found, err := st.Domain(d); err != nil || !found || !got.Visited() {
		t.Errorf("the visit of shard 1, after it was closed and opened read-only: found %v, %v", found, err)
	}
}

// What a killed node left in its temporary directory (an export's part,
// sort runs and backup; a handoff's backup) is removed when the next
// node starts there; nothing else is.
func TestNewHandlerRemovesStaleTemp(t *testing.T) {
	fake := fleettest.New(nil, 0)
	dir := t.TempDir()
	stale := []string{".export-shard=01-123", ".backup-shard=00-456"}
	kept := []string{"store", "crawl.sock", ".export-notes.txt"}
	for _, d := range stale {
		if err := os.MkdirAll(filepath.Join(dir, d, "shard=01", ".tmp-sort-1"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range kept {
		if err := os.WriteFile(filepath.Join(dir, k), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	st, err := shard.Open(filepath.Join(t.TempDir(), "store"), shard.Options{Create: true, Shards: 2, ReadOnlyShards: true,
		Graph: graph.Options{NameCache: -1, RecordCache: -1}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	NewHandler(Options{Store: st, TmpDir: dir}).SetGate(fake)
	for _, d := range stale {
		if _, err := os.Stat(filepath.Join(dir, d)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: %v, want removed", d, err)
		}
	}
	for _, k := range kept {
		if _, err := os.Stat(filepath.Join(dir, k)); err != nil {
			t.Errorf("%s: %v, want kept", k, err)
		}
	}
}
