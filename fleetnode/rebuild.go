package fleetnode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// RebuildOptions configure a fleet rebuild.
type RebuildOptions struct {
	// Rebuild are the rebuild's options: DataDir stages the parts and the
	// snapshot, Storage must publish to Snapshots (a snapshot.Mirror of
	// the data dir and the snapshot store: what `rebuild --snapshots`
	// makes), Now names the snapshot.
	Rebuild rebuild.Options
	// Snapshots is the fleet's snapshot store: the nodes upload their
	// parts to parts/<id>/shard=NN/ there, and the snapshot is published
	// there (current last), where the nodes pull their schedule from.
	Snapshots objstore.Store
	// ExportTimeout bounds the barrier: every shard's owner must have
	// answered within it (0: 10 minutes).
	ExportTimeout time.Duration
	// LockTTL is the rebuild lock's lease (0: fleet.DefaultTTL).
	LockTTL time.Duration
	Logger  *slog.Logger
}

// Rebuild is a fleet rebuild: it takes the fleet's rebuild lock (a
// *fleet.RebuildBusyError when another holds it), asks every shard's
// owner for its part (fleet.RebuildLock.CollectExports: one failed or
// missing shard fails the rebuild, and `current` stays), downloads the
// parts, merges them (rebuild.RunParts: the same snapshot one store of
// the same links gives, plus the schedule split by shard, with the
// routing the parts name), publishes the snapshot and moves `current`. The
// parts are removed from the snapshot store afterwards.
func Rebuild(ctx context.Context, cli *clientv3.Client, o RebuildOptions) (*data.Manifest, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if o.ExportTimeout <= 0 {
		o.ExportTimeout = 10 * time.Minute
	}
	if o.Snapshots == nil {
		return nil, fmt.Errorf("a fleet rebuild needs the fleet's snapshot store (--snapshots)")
	}
	lock, err := fleet.LockRebuild(ctx, cli, "mapthenet rebuild --fleet", o.LockTTL, time.Now())
	if err != nil {
		return nil, err
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		lock.Unlock(uctx)
	}()
	// The rebuild stops, unpublished, if the lock's lease is lost.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-lock.Done():
			log.Error("lost the fleet rebuild lock (etcd unreachable past its lease): stopping the rebuild")
			cancel()
		case <-ctx.Done():
		}
	}()

	id := snapshot.ID(o.Rebuild.Now)
	dest := objstore.PartsPrefix + id + "/"
	log.Info("fleet rebuild: asking every shard's owner for its part", "rebuild", id, "dest", o.Snapshots.String()+"/"+dest,
		"timeout", o.ExportTimeout.String())
	start := time.Now()
	answers, err := lock.CollectExports(ctx, id, dest, o.ExportTimeout, time.Now())
	defer removeParts(context.WithoutCancel(ctx), o.Snapshots, dest, log)
	if err != nil {
		return nil, err
	}
	log.Info("fleet rebuild: every shard exported", "rebuild", id, "shards", len(answers), "seconds", time.Since(start).Seconds())

	// Not under rebuilds/: the rebuild removes what is staged there as
	// left by an interrupted one before it starts.
	staged, err := os.MkdirTemp(o.Rebuild.DataDir, ".fleet-parts-"+id+"-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staged)
	parts := make([]*snapshot.Part, len(answers))
	for i, a := range answers {
		dir := filepath.Join(staged, rebuild.PartDir(a.Shard))
		if err := download(ctx, o.Snapshots, a.Part.URI, dir); err != nil {
			return nil, fmt.Errorf("shard %d's part (exported by %s): %w", a.Shard, a.Node, err)
		}
		p, err := snapshot.OpenPart(dir)
		if err != nil {
			return nil, fmt.Errorf("shard %d's part (exported by %s): %w", a.Shard, a.Node, err)
		}
		if p.Manifest.Shard != a.Shard || p.Manifest.Shards != len(answers) {
			return nil, fmt.Errorf("shard %d's part (exported by %s) says it is shard %d of %d", a.Shard, a.Node, p.Manifest.Shard, p.Manifest.Shards)
		}
		parts[i] = p
	}
	// The schedule is split by shard as the nodes' stores route domains.
	platforms := parts[0].Manifest.Platforms
	for _, p := range parts[1:] {
		if !slices.Equal(p.Manifest.Platforms, platforms) {
			return nil, fmt.Errorf("shard %d's part routes by platforms %q, shard 0's by %q: the nodes' stores disagree (every node needs the same --platform table)",
				p.Manifest.Shard, p.Manifest.Platforms, platforms)
		}
	}
	router, err := shard.NewRouter(len(parts), platforms)
	if err != nil {
		return nil, err
	}
	o.Rebuild.ScheduleShards = &router
	return rebuild.RunParts(ctx, parts, o.Rebuild)
}

// download copies every object under prefix into dir, by its key's rest.
func download(ctx context.Context, st objstore.Store, prefix, dir string) error {
	if !strings.HasPrefix(prefix, objstore.PartsPrefix) {
		return fmt.Errorf("part location %q is not under %s", prefix, objstore.PartsPrefix)
	}
	infos, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, in := range infos {
		rel := strings.TrimPrefix(in.Key, prefix)
		if rel == "" || strings.Contains(rel, "..") {
			continue
		}
		path := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := objstore.Download(ctx, st, in.Key, path); err != nil {
			return err
		}
	}
	return nil
}

// removeParts deletes a rebuild's parts from the snapshot store.
func removeParts(ctx context.Context, st objstore.Store, prefix string, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	infos, err := st.List(ctx, prefix)
	if err == nil {
		for _, in := range infos {
			if err = st.Delete(ctx, in.Key); err != nil {
				break
			}
		}
	}
	if err != nil {
		log.Warn("could not remove a fleet rebuild's parts (the next rebuild of that id would replace them)", "prefix", prefix, "err", err)
	}
}
