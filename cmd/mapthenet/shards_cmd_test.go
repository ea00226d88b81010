package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// A store's K: made by crawl --create --shards, shown by status, kept by
// later commands (another --shards is a usage error), changed only by
// store reshard, which is refused while the store is held (exit 3) and
// keeps what rebuild makes of the store.
func TestShardsCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errOut := runIn(t, dir, "crawl", "--until-idle", "--create", "--shards", "4", "--connect-to", "::127.0.0.1:1"); code != 0 {
		t.Fatalf("crawl --create --shards 4: exit %d: %s", code, errOut)
	}
	if l, ok, err := shard.ReadLayout(filepath.Join(dir, "store")); err != nil || !ok || l.Shards != 4 {
		t.Fatalf("layout %+v %v %v", l, ok, err)
	}
	code, out, _ := runIn(t, dir, "status", "--json")
	var st statusReport
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.Store.Shards != 4 {
		t.Errorf("status: exit %d, %s", code, out)
	}
	if code, _, errOut := runIn(t, dir, "crawl", "--until-idle", "--shards", "3", "--connect-to", "::127.0.0.1:1"); code != exitUsage ||
		!strings.Contains(errOut, "store reshard --shards 3") {
		t.Errorf("crawl --shards 3 on a store of 4: exit %d: %s", code, errOut)
	}

	// A store of one shard, with something in it, resharded to 3.
	dir = t.TempDir()
	fillStore(t, dir)
	if code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z"); code != 0 {
		t.Fatalf("rebuild: exit %d: %s", code, errOut)
	}
	before := snapshotFiles(t, dir, "2026-12-01T030000Z")
	held, err := shard.Open(filepath.Join(dir, "store"), shard.Options{})
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runIn(t, dir, "store", "reshard", "--shards", "3")
	held.Close()
	if code != exitBusy {
		t.Errorf("reshard of a held store: exit %d, want %d: %s", code, exitBusy, errOut)
	}
	code, out, errOut = runIn(t, dir, "store", "reshard", "--shards", "3")
	if code != 0 || !strings.Contains(out, "resharded from 1 to 3") {
		t.Fatalf("reshard: exit %d: %s %s", code, out, errOut)
	}
	olds, _ := filepath.Glob(filepath.Join(dir, "store.old-*"))
	if len(olds) != 1 {
		t.Errorf("the old store kept as %v, want one store.old-*", olds)
	}
	// Its scratch (sorted runs, the check's parts) and staging are gone.
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("the reshard left %v in the data directory", left)
	}
	if code, out, errOut := runIn(t, dir, "store", "verify"); code != 0 {
		t.Errorf("verify after reshard: exit %d: %s %s", code, out, errOut)
	}
	// The same snapshot from the resharded store (another second).
	if code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:01Z"); code != 0 {
		t.Fatalf("rebuild after reshard: exit %d: %s", code, errOut)
	}
	after := snapshotFiles(t, dir, "2026-12-01T030001Z")
	// (domains.parquet and schedule.parquet depend on --now and the
	// previous snapshot.)
	for _, f := range []string{"edges.parquet", "link_words.parquet", "visits.parquet"} {
		if before[f] != after[f] {
			t.Errorf("%s differs after the reshard", f)
		}
	}
	// Backup and restore of the three shards.
	backup := filepath.Join(t.TempDir(), "b.tar")
	if code, _, errOut := runIn(t, dir, "store", "backup", "--out", backup); code != 0 {
		t.Fatalf("backup: exit %d: %s", code, errOut)
	}
	other := t.TempDir()
	if code, _, errOut := runIn(t, other, "store", "restore", backup); code != 0 {
		t.Fatalf("restore: exit %d: %s", code, errOut)
	}
	if l, ok, _ := shard.ReadLayout(filepath.Join(other, "store")); !ok || l.Shards != 3 {
		t.Errorf("restored layout %+v", l)
	}
}

// snapshotFiles reads each Parquet file of snapshot id whole.
func snapshotFiles(t *testing.T, dir, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range snapshot.ParquetFiles {
		b, err := os.ReadFile(filepath.Join(dir, "rebuilds", id, f))
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}
