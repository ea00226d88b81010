package fleetnode

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// countingStore counts the objects opened, by key.
type countingStore struct {
	objstore.Store
	mu     sync.Mutex
	opened map[string]int
}

func (c *countingStore) Open(ctx context.Context, key string) (objstore.Object, error) {
	c.mu.Lock()
	c.opened[key]++
	c.mu.Unlock()
	return c.Store.Open(ctx, key)
}

// reads returns and clears the counts of the snapshot's files opened
// (rebuilds/<id>/...), by file.
func (c *countingStore) reads(id string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, n := range c.opened {
		if f, ok := strings.CutPrefix(k, objstore.SnapshotPrefix(id)); ok {
			out[f] = n
		}
	}
	c.opened = map[string]int{}
	return out
}

var asOf = time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)

// publishSnapshot rebuilds store (with schedule partitions when
// partitioned) as of at in a data dir of its own and publishes the
// snapshot to st.
func publishSnapshot(t *testing.T, store *shard.Store, st objstore.Store, at time.Time, partitioned bool) *data.Manifest {
	t.Helper()
	dir := t.TempDir()
	o := rebuild.Options{DataDir: dir, Now: at, MapTop: -1}
	if partitioned {
		r := store.Router()
		o.ScheduleShards = &r
	}
	m, err := rebuild.Run(t.Context(), store, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := objstore.Publish(t.Context(), st, m.ID, snapshot.Local(dir).Location(m.ID, ""), nil); err != nil {
		t.Fatal(err)
	}
	return m
}

// dueDomains are the domains of the node's pulled schedule due by far
// in the future, sorted.
func dueDomains(t *testing.T, dataDir string) []string {
	t.Helper()
	local := snapshot.Local(dataDir)
	id, err := local.Current()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := crawl.ReadDue(snapshot.At(local, id), asOf.Add(1000*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, r := range rows {
		out = append(out, r.Domain)
	}
	slices.Sort(out)
	return out
}

// A node pulls the manifest and the partitions of the shards it holds,
// nothing else, and reads exactly their rows; a shard taken later
// (Handler.Start) gets its partition added; a damaged partition is
// refused by its checksum; a snapshot without partitions brings its
// whole schedule.
func TestPullSchedulePartitions(t *testing.T) {
	const k = 4
	store, err := shard.Open(filepath.Join(t.TempDir(), "store"), shard.Options{Create: true, Shards: k})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var seeds []string
	byShard := make([][]string, k)
	for i := range 40 {
		d := fmt.Sprintf("site%02d.example", i)
		seeds = append(seeds, d)
		byShard[store.ShardOf(d)] = append(byShard[store.ShardOf(d)], d)
	}
	if err := store.AddDomains(seeds, asOf.Add(-time.Hour), true); err != nil {
		t.Fatal(err)
	}
	for s, ds := range byShard {
		if len(ds) == 0 {
			t.Fatalf("no seed in shard %d: pick other names", s)
		}
		slices.Sort(byShard[s])
	}
	dir := snapshotDir(t)
	st := &countingStore{Store: dir, opened: map[string]int{}}
	m := publishSnapshot(t, store, st, asOf, true)
	st.reads(m.ID)

	node := t.TempDir()
	id, changed, err := PullSchedule(t.Context(), st, node, []int{1, 3})
	if err != nil || id != m.ID || !changed {
		t.Fatalf("pull: %s, %v, %v", id, changed, err)
	}
	want := map[string]int{data.ManifestFile: 1, data.SchedulePartitionFile(1): 1, data.SchedulePartitionFile(3): 1}
	if got := st.reads(m.ID); !mapsEqual(got, want) {
		t.Errorf("the pull read %v, want %v", got, want)
	}
	if got, want := dueDomains(t, node), sortedUnion(byShard[1], byShard[3]); !slices.Equal(got, want) {
		t.Errorf("due after the pull: %v, want shards 1 and 3's %v", got, want)
	}
	if _, changed, err := PullSchedule(t.Context(), st, node, []int{1, 3}); err != nil || changed {
		t.Errorf("a pull of the same snapshot: changed %v, %v", changed, err)
	}
	if got := st.reads(m.ID); len(got) != 0 {
		t.Errorf("a pull of the same snapshot read %v", got)
	}

	// The node takes shard 2: its partition comes with it.
	h := NewHandler(Options{Store: store, Snapshots: st, DataDir: node, TmpDir: t.TempDir()})
	g := fleet.Grant{Shard: 2, Token: 7, Fence: fleet.NewFence(2, 7, func() error { return nil }), ReadyAt: time.Now()}
	if err := h.Start(t.Context(), g); err != nil {
		t.Fatal(err)
	}
	if got := st.reads(m.ID); !mapsEqual(got, map[string]int{data.SchedulePartitionFile(2): 1}) {
		t.Errorf("taking shard 2 read %v, want its partition only", got)
	}
	if got, want := dueDomains(t, node), sortedUnion(byShard[1], byShard[2], byShard[3]); !slices.Equal(got, want) {
		t.Errorf("due after taking shard 2: %v, want %v", got, want)
	}
	if held := h.Held(); !slices.Equal(held, []int{2}) {
		t.Errorf("held %v, want [2]", held)
	}
	h.Stop(2, true)

	// A partition whose bytes are not the manifest's is refused.
	key := objstore.SnapshotKey(m.ID, data.SchedulePartitionFile(0))
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.WriteFile(bad, []byte("not the partition"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := objstore.PutFile(t.Context(), dir, key, bad); err != nil {
		t.Fatal(err)
	}
	if n, err := AddPartitions(t.Context(), st, node, []int{0}); err == nil || n != 0 || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("a damaged partition: added %d, %v; want a checksum error", n, err)
	}
	if _, err := os.Stat(snapshot.Local(node).Location(m.ID, data.SchedulePartitionFile(0))); err == nil {
		t.Error("the damaged partition is in the node's snapshot")
	}

	// One machine's snapshot (no partitions): the whole schedule.
	m2 := publishSnapshot(t, store, st, asOf.Add(time.Hour), false)
	st.reads(m2.ID)
	if id, changed, err := PullSchedule(t.Context(), st, node, []int{1}); err != nil || id != m2.ID || !changed {
		t.Fatalf("pull of a snapshot without partitions: %s, %v, %v", id, changed, err)
	}
	if got := st.reads(m2.ID); !mapsEqual(got, map[string]int{data.ManifestFile: 1, data.ScheduleFile: 1}) {
		t.Errorf("the pull read %v, want the manifest and schedule.parquet", got)
	}
	if got := dueDomains(t, node); len(got) != len(seeds) {
		t.Errorf("due from a whole schedule: %d domains, want %d", len(got), len(seeds))
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func sortedUnion(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return out
}
