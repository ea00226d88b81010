package fleetnode

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/fleet/fleettest"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/objstore/objstoretest"
	"github.com/mapthenet/mapthenet/shard"
)

// keysUnder lists the store's keys under prefix.
func keysUnder(t *testing.T, st objstore.Store, prefix string) []string {
	t.Helper()
	infos, err := st.List(t.Context(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range infos {
		out = append(out, in.Key)
	}
	return out
}

// Once a shard's new backup is recorded as its state, its backups older
// than the one before are removed: that one stays (a node may be
// restoring from it), as do a later owner's, other shards' and keys that
// are not backups.
// On a local directory and on S3 (versitygw; that subtest skips, saying
// so, when it is not installed).
func TestPruneBackups(t *testing.T) {
	t.Run("dir", func(t *testing.T) {
		st := snapshotDir(t)
		testPruneBackups(t, st)
	})
	t.Run("s3", func(t *testing.T) {
		testPruneBackups(t, objstoretest.Start(t).Store("fleet", nil))
	})
}

func testPruneBackups(t *testing.T, st objstore.Store) {
	store, err := shard.Open(filepath.Join(t.TempDir(), "store"), shard.Options{Create: true, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, key := range []string{BackupKey(0, 3), BackupKey(0, 5), BackupKey(0, 7), BackupKey(0, 20), BackupKey(1, 2),
		"backups/shard=00/notes.txt", "backups/shard=00/04.badger"} {
		if err := st.Put(t.Context(), key, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	fake := fleettest.New(nil, 0)
	h := NewHandler(Options{Store: store, Snapshots: st, TmpDir: t.TempDir()})
	h.SetGate(fake)
	g := fleet.Grant{Shard: 0, Token: 10, Fence: fleet.NewFence(0, 10, func() error { return nil }), ReadyAt: time.Now()}
	if err := h.Start(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	h.Stop(0, false) // a clean handoff: a backup, recorded, then the pruning

	state, ok := fake.State(0)
	if !ok || state.Backup != BackupKey(0, 10) {
		t.Fatalf("shard 0's state %+v, want its backup %s", state, BackupKey(0, 10))
	}
	got := keysUnder(t, st, BackupsPrefix)
	want := []string{BackupKey(0, 10), BackupKey(0, 20), BackupKey(0, 7), "backups/shard=00/04.badger", "backups/shard=00/notes.txt", BackupKey(1, 2)}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("backups after the handoff:\n%v\nwant\n%v", got, want)
	}
	// Again with nothing older: nothing removed.
	if removed, err := PruneBackups(t.Context(), st, 0, 10); err != nil || len(removed) != 0 {
		t.Errorf("a second pruning removed %v, %v", removed, err)
	}
}
