package fleetnode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/snapshot"
)

// PullSchedule brings the fleet's current snapshot's schedule into
// dataDir's rebuilds/<id>/ and moves the local rebuilds/current to it,
// when it names another snapshot than the local current does: the crawl
// reads its due domains from there. A fleet rebuild's snapshot is split
// by shard (data.SchedulePartitions): only the manifest and the
// partitions of the shards in held are pulled, each checked against the
// manifest's SHA-256; a snapshot without partitions (one machine's
// rebuild published there) brings its whole schedule.parquet. When the
// local current is the fleet's already, the partitions of held shards it
// lacks are added (AddPartitions). It returns the id and whether the
// local schedule changed; none published yet is no change. Older pulled
// snapshots are removed.
func PullSchedule(ctx context.Context, st objstore.Store, dataDir string, held []int) (id string, changed bool, err error) {
	id, err = objstore.Current(ctx, st)
	if errors.Is(err, objstore.ErrNoSnapshot) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	local := snapshot.Local(dataDir)
	have, err := local.Current()
	if err != nil {
		return id, false, err
	}
	if have == id {
		n, err := AddPartitions(ctx, st, dataDir, held)
		return id, n > 0, err
	}
	if err := local.Stat(id); err != nil {
		if err := pullSnapshot(ctx, st, local, id, held); err != nil {
			return id, false, err
		}
	}
	if err := local.SetCurrent(id); err != nil {
		return id, false, err
	}
	if ids, err := local.List(); err == nil {
		for _, old := range ids {
			if old != id {
				local.Remove(old)
			}
		}
	}
	return id, true, nil
}

// pullSnapshot stages snapshot id's manifest and schedule (the held
// shards' partitions, or the whole file) and publishes it locally.
func pullSnapshot(ctx context.Context, st objstore.Store, local *snapshot.Dir, id string, held []int) error {
	staged, err := local.Stage(id)
	if err != nil {
		return err
	}
	defer os.RemoveAll(staged) // after Publish, nothing is left there
	mpath := filepath.Join(staged, data.ManifestFile)
	if err := objstore.Download(ctx, st, objstore.SnapshotKey(id, data.ManifestFile), mpath); err != nil {
		return fmt.Errorf("pulling snapshot %s's manifest: %w", id, err)
	}
	m, err := readManifestFile(mpath)
	if err != nil {
		return fmt.Errorf("pulling snapshot %s: %w", id, err)
	}
	if m.SchedulePartitions == nil {
		err := objstore.Download(ctx, st, objstore.SnapshotKey(id, data.ScheduleFile), filepath.Join(staged, data.ScheduleFile))
		if err != nil {
			return fmt.Errorf("pulling snapshot %s's %s: %w", id, data.ScheduleFile, err)
		}
	} else {
		for _, p := range partitionsOf(m, held) {
			path := filepath.Join(staged, filepath.FromSlash(p.File))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := downloadPartition(ctx, st, id, p, path); err != nil {
				return err
			}
		}
	}
	return local.Publish(id, staged)
}

// AddPartitions adds to dataDir's current snapshot (pulled from the
// fleet's) the schedule partitions of shards it does not hold yet, from
// the snapshot store: what a node does when it takes a shard. It returns
// how many it added; a local snapshot without partitions (or none) is
// nothing to do.
func AddPartitions(ctx context.Context, st objstore.Store, dataDir string, shards []int) (int, error) {
	local := snapshot.Local(dataDir)
	id, err := local.Current()
	if err != nil || id == "" {
		return 0, err
	}
	m, err := snapshot.ReadManifest(local, id)
	if err != nil {
		return 0, err
	}
	added := 0
	for _, p := range partitionsOf(m, shards) {
		if _, err := os.Stat(local.Location(id, p.File)); err == nil {
			continue
		}
		err := local.Add(id, p.File, func(path string) error { return downloadPartition(ctx, st, id, p, path) })
		if err != nil {
			return added, err
		}
		added++
	}
	return added, nil
}

// partitionsOf are m's partitions of shards (none when m has none).
func partitionsOf(m *data.Manifest, shards []int) []data.SchedulePartition {
	sp := m.SchedulePartitions
	if sp == nil {
		return nil
	}
	var out []data.SchedulePartition
	for _, s := range shards {
		if s >= 0 && s < len(sp.Files) && sp.Files[s].Shard == s {
			out = append(out, sp.Files[s])
		}
	}
	return out
}

// downloadPartition downloads partition p of snapshot id to path and
// checks it against the manifest's SHA-256 (a damaged or half-replaced
// object is refused, not crawled from).
func downloadPartition(ctx context.Context, st objstore.Store, id string, p data.SchedulePartition, path string) error {
	key := objstore.SnapshotKey(id, p.File)
	if err := objstore.Download(ctx, st, key, path); err != nil {
		return fmt.Errorf("pulling snapshot %s's %s: %w", id, p.File, err)
	}
	sum, err := snapshot.FileSHA256(path)
	if err != nil {
		return err
	}
	if sum != p.SHA256 {
		os.Remove(path)
		return fmt.Errorf("pulling snapshot %s's %s from %s: SHA-256 %s, the manifest says %s", id, p.File, st, sum, p.SHA256)
	}
	return nil
}

// readManifestFile reads a manifest.json at a local path.
func readManifestFile(path string) (*data.Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m data.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: not a valid manifest: %v", path, err)
	}
	return &m, nil
}
