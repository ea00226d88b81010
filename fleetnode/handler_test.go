package fleetnode

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
	st, err := shard.Open(filepath.Join(dir, "store"), shard.Options{Create: true, Shards: 2,
		Graph: graph.Options{NameCache: -1, RecordCache: -1}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	h := NewHandler(Options{Store: st, Snapshots: snaps, TmpDir: dir})
	h.SetGate(fake)
	return h
}

// A clean handoff makes a backup only when something was written to the
// shard since the backup its state names: one restored at the take, or
// made by an export of the same holding.
func TestHandoffBacksUpOnlyAChangedShard(t *testing.T) {
	ctx := context.Background()
	dir, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
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
