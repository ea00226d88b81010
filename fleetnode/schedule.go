package fleetnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/snapshot"
)

// PullSchedule brings the fleet's current snapshot's schedule (and its
// manifest) from the snapshot store into dataDir's rebuilds/<id>/ and
// moves the local rebuilds/current to it, when it names another snapshot
// than the local current does: the crawl reads its due domains from there
// (and keeps those of the shards it holds). It returns the id and whether
// it changed; none published yet is no change. Older pulled snapshots
// are removed.
func PullSchedule(ctx context.Context, st objstore.Store, dataDir string) (id string, changed bool, err error) {
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
		return id, false, nil
	}
	if err := local.Stat(id); err != nil {
		staged, err := local.Stage(id)
		if err != nil {
			return id, false, err
		}
		for _, f := range []string{data.ScheduleFile, data.ManifestFile} {
			err := objstore.Download(ctx, st, objstore.SnapshotKey(id, f), filepath.Join(staged, f))
			if err != nil {
				os.RemoveAll(staged)
				return id, false, fmt.Errorf("pulling snapshot %s's %s: %w", id, f, err)
			}
		}
		if err := local.Publish(id, staged); err != nil {
			os.RemoveAll(staged)
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
