package rebuild

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// A fleet rebuild (Options.ScheduleShards) writes, beside the whole
// schedule.parquet, one partition per shard: each holds exactly the rows
// of schedule.parquet whose domain the routing puts in its shard, in
// schedule.parquet's order, listed in the manifest with its rows and
// checksum; the other files are those of a rebuild without partitions.
// A removal's purge rewrites the partition that held the domain and its
// checksum.
func TestSchedulePartitions(t *testing.T) {
	const k = 3
	dir := t.TempDir()
	s, err := shard.Open(filepath.Join(dir, "store"), shard.Options{Create: true, Shards: k, Platforms: []string{"github.io"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fillWeb(t, s, 0)
	want := snapshotHashes(t, s, filepath.Join(dir, "plain"), asOf)

	// Published to a copy too (an object store's Storage, as rebuild
	// --snapshots does), which a removal rewrites as well.
	router := s.Router()
	objDir, err := objstore.NewDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	fleetDir := filepath.Join(dir, "fleet")
	mirror := snapshot.Mirror(snapshot.Local(fleetDir), objstore.NewStorage(t.Context(), objDir, snapshot.Local(fleetDir).Location("", ""), nil))
	o := Options{DataDir: fleetDir, Now: asOf, Tiers: testTiers, ScheduleShards: &router, Storage: mirror}
	o.Rank.Workers = 2
	m, err := Run(t.Context(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := fileHashes(t, o.DataDir, m); !reflect.DeepEqual(got, want) {
		t.Errorf("partitions changed the snapshot's files:\n%v\nwant\n%v", got, want)
	}
	local := snapshot.Local(o.DataDir)
	files := snapshot.At(local, m.ID)
	whole, err := files.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	sp := m.SchedulePartitions
	if sp == nil || sp.Shards != k || len(sp.Files) != k || !reflect.DeepEqual(sp.Platforms, []string{"github.io"}) {
		t.Fatalf("manifest's partitions %+v, want %d of them with the platforms", sp, k)
	}
	parts := make([][]data.ScheduleRow, k)
	var total int64
	for i, p := range sp.Files {
		if p.Shard != i || p.File != data.SchedulePartitionFile(i) {
			t.Errorf("partition %d listed as %+v", i, p)
		}
		if err := files.EachSchedulePartition(i, func(rows []data.ScheduleRow) error {
			parts[i] = append(parts[i], rows...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		sum, err := snapshot.FileSHA256(local.Location(m.ID, p.File))
		if err != nil || sum != p.SHA256 {
			t.Errorf("partition %d: SHA-256 %s (%v), the manifest says %s", i, sum, err, p.SHA256)
		}
		if int64(len(parts[i])) != p.Rows || p.Rows == 0 {
			t.Errorf("partition %d: %d rows, the manifest says %d (want some)", i, len(parts[i]), p.Rows)
		}
		total += p.Rows
	}
	if total != int64(len(whole)) {
		t.Errorf("partitions hold %d rows, schedule.parquet %d", total, len(whole))
	}
	byShard := make([][]data.ScheduleRow, k)
	for _, r := range whole {
		byShard[router.Of(r.Domain)] = append(byShard[router.Of(r.Domain)], r)
	}
	for i := range k {
		if !reflect.DeepEqual(parts[i], byShard[i]) {
			t.Errorf("partition %d is not schedule.parquet's rows of shard %d in its order", i, i)
		}
	}

	// A removal rewrites the partition that held the domain.
	gone := parts[1][0].Domain
	if _, err := snapshot.PurgeDomainIn(t.Context(), o.DataDir, mirror, gone); err != nil {
		t.Fatal(err)
	}
	after, err := snapshot.ReadManifest(local, m.ID)
	if err != nil {
		t.Fatal(err)
	}
	p := after.SchedulePartitions.Files[1]
	var left []data.ScheduleRow
	if err := files.EachSchedulePartition(1, func(rows []data.ScheduleRow) error { left = append(left, rows...); return nil }); err != nil {
		t.Fatal(err)
	}
	sum, _ := snapshot.FileSHA256(local.Location(m.ID, p.File))
	if !reflect.DeepEqual(left, parts[1][1:]) || p.Rows != int64(len(left)) || sum != p.SHA256 {
		t.Errorf("after removing %s: partition 1 has %d rows (manifest %d), SHA-256 %s (manifest %s); want %d rows without it",
			gone, len(left), p.Rows, sum, p.SHA256, len(parts[1])-1)
	}
	copied := filepath.Join(t.TempDir(), "copy.parquet")
	if err := objstore.Download(t.Context(), objDir, objstore.SnapshotKey(m.ID, p.File), copied); err != nil {
		t.Fatal(err)
	}
	if sum, _ := snapshot.FileSHA256(copied); sum != p.SHA256 {
		t.Errorf("after removing %s: the copy's partition 1 has SHA-256 %s, want %s", gone, sum, p.SHA256)
	}
}
