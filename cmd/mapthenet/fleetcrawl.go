package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/buildinfo"
	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/domain"
	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/fleetnode"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// fleetTimeout bounds each call to etcd a command makes before its work
// (the fleet's config, joining).
const fleetTimeout = 30 * time.Second

// openSnapshotStore opens --snapshots as an object store (a directory or
// s3://), checked reachable.
func openSnapshotStore(ctx context.Context, loc string) (objstore.Store, error) {
	l, err := objstore.ParseLocation(loc)
	if err != nil {
		return nil, usageError{fmt.Errorf("--snapshots: %w", err)}
	}
	st, err := l.Open(os.Getenv)
	if errors.Is(err, objstore.ErrBadLocation) {
		return nil, usageError{fmt.Errorf("--snapshots: %w", err)}
	}
	if err != nil {
		return nil, err
	}
	if err := st.Check(ctx); err != nil {
		return nil, fmt.Errorf("--snapshots %s: %w", loc, err)
	}
	return st, nil
}

// runFleetCrawl is crawl --fleet: the data dir's store holds local copies
// of the fleet's K shards (made on the first run, K from etcd); the node
// joins the fleet, takes the shards the assignment gives it and crawls
// their due domains and seeds until stopped (SIGTERM: it hands its shards
// over cleanly, then exits 0).
func (a *app) runFleetCrawl(cmd *cobra.Command, fl crawlFlags, opts crawl.Options) error {
	ctx := cmd.Context()
	log := a.logger
	eps, _ := fl.Fleet.endpoints()
	name, _ := fl.Fleet.nodeName()
	if fl.UntilIdle {
		return usagef("--until-idle: a fleet node runs until it is stopped (SIGTERM hands its shards over); use --max-duration for a bounded run")
	}
	if fl.Snapshots == "" {
		return usagef("crawl --fleet needs --snapshots DIR|s3://bucket/prefix: the fleet's snapshot store (schedules, export parts, shard backups)")
	}
	if fl.LeaseTTL < 2*time.Second || fl.LeaseTTL%time.Second != 0 {
		return usagef("--lease-ttl %v: want whole seconds, at least 2s", fl.LeaseTTL)
	}
	snaps, err := openSnapshotStore(ctx, fl.Snapshots)
	if err != nil {
		return err
	}
	cli, err := fleet.Dial(eps)
	if err != nil {
		return err
	}
	defer cli.Close()
	cctx, cancel := context.WithTimeout(ctx, fleetTimeout)
	cfg, _, err := fleet.ReadConfig(cctx, cli)
	cancel()
	if err != nil {
		return etcdError(err, eps, fleetTimeout)
	}
	if fl.Shards != 0 && fl.Shards != cfg.Shards {
		return usagef("--shards %d: the fleet has %d shards (fleet init fixed them)", fl.Shards, cfg.Shards)
	}
	if cfg.Shards < 2 {
		return usagef("the fleet has %d shard: a fleet crawl needs at least 2 (one per node you may run, better 4)", cfg.Shards)
	}
	if err := os.MkdirAll(a.DataDir, 0o755); err != nil {
		return err
	}
	ownerPath := filepath.Join(a.DataDir, control.StoreOwnerName)
	// Read-only but for the shards the node takes (the handler opens
	// those for writing): the others cost no compactors or memtables.
	store, err := openStore(a.DataDir, shard.Options{Graph: graph.Options{Logger: log, NameCache: nameCache(fl.NameCache)},
		Create: true, Shards: cfg.Shards, Platforms: platformSuffixes(opts.Platforms), ReadOnlyShards: true})
	if err != nil {
		if errors.Is(err, graph.ErrLocked) {
			return busyError{fmt.Errorf("data dir %s is in use by %s", a.DataDir, control.ReadOwner(ownerPath))}
		}
		return err
	}
	defer store.Close()
	if err := control.WriteOwner(ownerPath, control.Self("mapthenet crawl", time.Now())); err != nil {
		log.Warn("cannot say who holds the store", "err", err)
	}
	defer os.Remove(ownerPath)
	var seeds []string
	for _, f := range opts.Seeds {
		ds, _, err := crawl.ReadDomainList(f, domain.Normalize)
		if err != nil {
			return fmt.Errorf("--seeds: %w", err)
		}
		seeds = append(seeds, ds...)
	}
	seedsAt := opts.Now
	if seedsAt.IsZero() {
		seedsAt = time.Now().UTC()
	}
	h := fleetnode.NewHandler(fleetnode.Options{Store: store, Seeds: seeds, SeedsAt: seedsAt, Snapshots: snaps,
		TmpDir: a.DataDir, DataDir: a.DataDir, Logger: log})
	opts.Fleet = h.Crawl()

	reg, m := crawl.NewRegistry()
	opts.Metrics = m
	fm := fleet.NewMetrics(reg)
	addr := ""
	if fl.MetricsAddr != "" {
		ms, err := crawl.ServeMetrics(fl.MetricsAddr, reg, log)
		if err != nil {
			return usagef("--metrics-addr %s: %v", fl.MetricsAddr, err)
		}
		defer ms.Close()
		addr = fl.MetricsAddr
	}
	if opts.Progress == nil {
		opts.LogEvery = time.Minute
	}
	logCrawlStart(log, a.DataDir, opts, store)
	srv, err := serveFleetControl(store, a.DataDir, log, m.Activity())
	if err != nil {
		log.Warn("no control socket: mapthenet status cannot ask this node what it does", "err", err)
	} else {
		defer srv.Close()
	}
	if _, _, err := fleetnode.PullSchedule(ctx, snaps, a.DataDir, nil); err != nil {
		log.Warn("could not pull the fleet's schedule (crawling seeds; trying again every --recheck)", "err", err)
	}

	timing := fleet.Timing{TTL: fl.LeaseTTL, ResponseTimeout: opts.ResponseTimeout}
	if timing.ResponseTimeout == 0 {
		timing.ResponseTimeout = crawl.DefaultResponseTimeout
	}
	jctx, cancel := context.WithTimeout(ctx, 3*fl.LeaseTTL+fleetTimeout)
	node, err := fleet.StartNode(jctx, cli, fleet.NodeOptions{Name: name, Addr: addr, Version: buildinfo.Get().Version,
		Timing: timing, Handler: h, Logger: log, Metrics: fm, HoldOffFile: filepath.Join(a.DataDir, fleetnode.HoldOffFile)})
	cancel()
	if err != nil {
		return etcdError(err, eps, 3*fl.LeaseTTL+fleetTimeout)
	}
	h.SetGate(node)
	log.Info("joined the fleet", "fleet", cfg.FleetID, "node", name, "shards", cfg.Shards, "lease_ttl", fl.LeaseTTL.String(),
		"takeover_wait", timing.TTL+timing.ResponseTimeout+fleet.DefaultClockSkew)

	// The fleet's schedule, pulled from the snapshot store every --recheck;
	// the shards' due counts, for fleet status, every CountsEvery and when
	// the schedule or the shards change.
	pullDone := make(chan struct{})
	pctx, stopPull := context.WithCancel(ctx)
	started := time.Now()
	crawlNow := func() time.Time {
		if opts.Now.IsZero() {
			return time.Now().UTC()
		}
		return opts.Now.Add(time.Since(started))
	}
	go func() {
		defer close(pullDone)
		t := time.NewTicker(max(fl.Recheck, time.Second))
		defer t.Stop()
		var counted time.Time
		var countedHeld string
		for {
			select {
			case <-pctx.Done():
				return
			case <-t.C:
			}
			held := h.Held()
			id, changed, err := fleetnode.PullSchedule(pctx, snaps, a.DataDir, held)
			switch {
			case err != nil && pctx.Err() == nil:
				log.Warn("could not pull the fleet's schedule", "err", err)
			case changed:
				log.Info("pulled the fleet's new schedule", "snapshot", id)
				h.Crawl().Wake()
			}
			slices.Sort(held)
			if hs := fmt.Sprint(held); changed || hs != countedHeld || time.Since(counted) >= fleetnode.CountsEvery {
				if err := h.ReportCounts(pctx, crawlNow()); err != nil && pctx.Err() == nil {
					log.Warn("could not count the shards' due domains for fleet status", "err", err)
				}
				counted, countedHeld = time.Now(), hs
			}
		}
	}()

	stats, runErr := crawl.Run(ctx, store, opts)
	stopPull()
	<-pullDone
	// Leave the fleet cleanly: every shard handed over with its quiet time
	// (and closed: the store is closed next).
	h.Leaving()
	lctx, cancel := context.WithTimeout(context.Background(), fl.LeaseTTL+timing.ResponseTimeout)
	if err := node.Close(lctx); err != nil {
		log.Warn("leaving the fleet", "err", err)
	}
	cancel()
	counts := []any{"visits", stats.Visits, "pages", stats.Pages, "abandoned", stats.Abandoned, "seconds", stats.Elapsed.Seconds()}
	if runErr != nil {
		log.Warn("crawl stopped", counts...)
		return runErr
	}
	log.Info("crawl done", counts...)
	if srv != nil {
		srv.Shutdown(ctx) // before the store closes: a backup it runs finishes (unless stopped by a signal)
	}
	return store.Close()
}

// serveFleetControl answers other commands on <data-dir>/crawl.sock while
// a fleet node holds the store, as a single crawl does (serveControl),
// except for what a node's store cannot do alone: a rebuild of it would
// be of the shards it holds (the fleet's is rebuild --fleet, which asks
// every node for its part), and a removal must reach every node's store.
func serveFleetControl(store *shard.Store, dataDir string, log *slog.Logger, activity *crawl.Activity) (*control.Server, error) {
	return control.Serve(filepath.Join(dataDir, control.SocketName), map[string]control.Handler{
		"status": func(context.Context, json.RawMessage) (any, error) { return activity.Report(), nil },
		"rebuild": func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("this data directory is a fleet node's (crawl --fleet): it holds only some of the fleet's shards; " +
				"rebuild the fleet with mapthenet rebuild --fleet URL --snapshots LOCATION, from a data directory of its own")
		},
		"remove": func(context.Context, json.RawMessage) (any, error) {
			return nil, errors.New("this data directory is a fleet node's (crawl --fleet): removing a domain from a fleet is not supported yet " +
				"(every node's store and the snapshot store would need it)")
		},
		"backup": func(ctx context.Context, args json.RawMessage) (any, error) { return backupHere(ctx, store, args) },
	}, log)
}

// runFleetRebuild is rebuild --fleet: the parts of every shard, from
// their owners through the fleet's barrier, merged here into a snapshot
// published to --snapshots (and the data dir, which stages it).
func (a *app) runFleetRebuild(cmd *cobra.Command, fl rebuildFlags, opts rebuild.Options) error {
	eps, err := fl.Fleet.endpoints()
	if err != nil {
		return err
	}
	if fl.Snapshots == "" {
		return usagef("rebuild --fleet needs --snapshots DIR|s3://bucket/prefix: the fleet's snapshot store, where the nodes put their parts")
	}
	if fl.ExportTimeout <= 0 {
		return usagef("--export-timeout %v: want a positive duration", fl.ExportTimeout)
	}
	snaps, err := openSnapshotStore(cmd.Context(), fl.Snapshots)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(a.DataDir, 0o755); err != nil {
		return err
	}
	release, err := lockRebuild(a.DataDir, "mapthenet rebuild --fleet")
	if err != nil {
		return busyError{err}
	}
	defer release()
	cleanSnapshotCopies(cmd.Context(), opts.Storage, a.logger)
	cli, err := fleet.Dial(eps)
	if err != nil {
		return err
	}
	defer cli.Close()
	m, err := fleetnode.Rebuild(cmd.Context(), cli, fleetnode.RebuildOptions{Rebuild: opts, Snapshots: snaps,
		ExportTimeout: fl.ExportTimeout, Logger: a.logger})
	var busy *fleet.RebuildBusyError
	switch {
	case errors.As(err, &busy), errors.Is(err, snapshot.ErrBusy):
		return busyError{err}
	case err != nil:
		return err
	}
	printRebuildSummary(cmd.OutOrStdout(), m, snapshot.Local(a.DataDir).Location(m.ID, ""), opts.Storage)
	return nil
}
