package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// rebuildFlags are rebuild's flags. They travel as JSON to a running crawl
// that runs the rebuild for this command (RebuildRequest), so every flag
// that changes the snapshot needs a field here with a JSON name.
type rebuildFlags struct {
	Keep        int `json:"keep"`
	policyFlags     // --tiers, --min-in-domains (policy.go)
	Workers     int `json:"workers,omitempty"`
	MapTop      int `json:"map_top,omitempty"`
	// The snapshot guard (rebuild.Options.MaxShrink, AcceptShrink).
	MaxShrink    float64 `json:"max_shrink,omitempty"`
	AcceptShrink bool    `json:"accept_shrink,omitempty"`
	Create       bool    `json:"-"` // local only: a crawl's store exists
	// Snapshots is where a copy of every snapshot goes besides the data
	// directory (--snapshots: a directory or s3://bucket/prefix).
	Snapshots string `json:"snapshots,omitempty"`
	// A fleet rebuild (local only): --fleet, --export-timeout.
	Fleet         fleetFlags    `json:"-"`
	ExportTimeout time.Duration `json:"-"`
}

// RebuildRequest is the args of the control socket's "rebuild" command:
// `rebuild` sends it (control.Call) when a running crawl holds the store,
// and the crawl turns it into rebuild.Options exactly as a local rebuild
// would (rebuildOptions).
type RebuildRequest struct {
	Now   time.Time    `json:"now"`
	Flags rebuildFlags `json:"flags"`
}

func newRebuildCommand(a *app) *cobra.Command {
	var fl rebuildFlags
	cmd := &cobra.Command{
		Use:   "rebuild [--keep N] [--now T] [--tiers MAXRANK:DAYS:PAGES,...]",
		Short: "Export the store to a ranked Parquet snapshot and move rebuilds/current to it",
		Long: `rebuild takes one consistent view of the link store (<data-dir>/store) and
writes a snapshot under <data-dir>/rebuilds/<id>/, id = the --now time as
YYYY-MM-DDTHHMMSSZ: domains.parquet (rank, tier, next visit, ... of every
known domain), edges.parquet, link_words.parquet, visits.parquet,
schedule.parquet (what the next crawl visits, when and why) and
manifest.json (counts, rank parameters, iterations, residual, tier table,
stage timings). Ranks are PageRank over followed links.

Only a complete snapshot becomes current: rebuilds/current, a relative
symbolic link, moves to it in one step. A rebuild that fails or is killed
leaves current where it was; what it left behind is removed by the next.
Snapshots beyond the newest --keep are removed (never the current one).

Safe to run from cron while a crawl runs. The crawl holds the store (one
process at a time may open it), so rebuild then asks the crawl, over
<data-dir>/crawl.sock, to run the rebuild inside its process: it reads one
consistent view of the store (a visit is wholly in it or wholly out), the
crawl goes on meanwhile and picks the new schedule up within a minute
(its --recheck). The summary is printed here as for a local rebuild, and
the stages are logged in both logs. Stopping this command (Ctrl-C) stops
that rebuild.

Exit status 3 (busy), never waiting: another rebuild is running (it holds
<data-dir>/rebuild.lock; the message names its pid), or another process
holds the store and no crawl answers on crawl.sock.

The revisit policy is configuration, shared with crawl: --tiers lists
MAXRANK:DAYS:PAGES from the best tier down; the last entry's MAXRANK is *
(or 0): every lower rank and the unranked. Domains never visited read the
last tier's pages. --min-in-domains is how many domains must link to a
never-visited domain (followed links) before it is scheduled; seeds are
scheduled anyway. Set both as keys of <data-dir>/config.toml (tiers =
"1000:7:50,10000:30:20,*:365:8", min-in-domains = 2) so that the crawl's
first visits and its own discoveries follow the same table and threshold.

`,
		Example: `  # nightly from cron
  mapthenet rebuild

  # replay as of a given time, keeping three snapshots
  mapthenet rebuild --now 2026-12-02T03:00:00Z --keep 3

  # a fleet rebuild: every shard's owner exports its part, merged here
  mapthenet rebuild --fleet etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379 --snapshots s3://mapthenet/fleet

  # a smaller tier table
  mapthenet rebuild --tiers 1000:7:50,10000:30:20,*:365:8`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runRebuild(cmd, fl)
		},
	}
	addNowFlag(cmd, a)
	f := cmd.Flags()
	f.IntVar(&fl.Keep, "keep", rebuild.DefaultKeep, "keep this many snapshots, the new one included")
	addPolicyFlags(f, &fl.policyFlags)
	f.IntVar(&fl.Workers, "workers", 0, "PageRank workers (0: every core)")
	f.IntVar(&fl.MapTop, "map-top", rebuild.DefaultMapTop, "lay out this many of the best-ranked domains on the map (map_x, map_y), the other ranked beside their neighbours; 0: no map")
	f.Float64Var(&fl.MaxShrink, "max-shrink", rebuild.DefaultMaxShrink, "snapshot guard: a snapshot with fewer than (1 - this) of the current one's domains or edges is written but not made current (exit 1); 0: the guard is off, except that an empty store never replaces a non-empty snapshot")
	f.BoolVar(&fl.AcceptShrink, "accept-shrink", false, "make the snapshot current whatever the guard says (an empty one too)")
	f.BoolVar(&fl.Create, "create", false, "start a new store when the data dir holds none (without it, rebuild refuses: a mistyped --data-dir is not a new store)")
	addSnapshotsFlag(f, &fl.Snapshots)
	addFleetFlag(f, &fl.Fleet)
	f.DurationVar(&fl.ExportTimeout, "export-timeout", 10*time.Minute, "with --fleet: how long every shard's owner has to export its part")
	return cmd
}

// rebuildOptions checks the flags and turns them into rebuild.Options
// (without Logger and Progress): the same for a local rebuild and for one
// a running crawl does on request. With --snapshots, the snapshot store is
// reached once (a rebuild must fail before its work, not after).
func rebuildOptions(ctx context.Context, dataDir string, fl rebuildFlags, now time.Time, log *slog.Logger) (rebuild.Options, error) {
	if fl.Keep < 1 {
		return rebuild.Options{}, usagef("--keep %d: want at least 1", fl.Keep)
	}
	if fl.Workers < 0 {
		return rebuild.Options{}, usagef("--workers %d: want 0 (every core) or more", fl.Workers)
	}
	if fl.MapTop < 0 {
		return rebuild.Options{}, usagef("--map-top %d: want a number of domains, or 0 for no map", fl.MapTop)
	}
	if fl.MaxShrink < 0 || fl.MaxShrink >= 1 {
		return rebuild.Options{}, usagef("--max-shrink %g: want a fraction from 0 (guard off) to below 1", fl.MaxShrink)
	}
	policy, err := fl.policy()
	if err != nil {
		return rebuild.Options{}, err
	}
	opts := rebuild.Options{
		DataDir:      dataDir,
		Now:          now,
		Tiers:        policy.Tiers,
		MinInDomains: policy.MinInDomains,
		Keep:         fl.Keep,
		MapTop:       fl.MapTop,
		// On the command line 0 turns each off; in rebuild.Options 0 is
		// the default and negative is off.
		MaxShrink:    fl.MaxShrink,
		AcceptShrink: fl.AcceptShrink,
	}
	if fl.MapTop == 0 {
		opts.MapTop = -1
	}
	if fl.MaxShrink == 0 {
		opts.MaxShrink = -1
	}
	opts.Rank.Workers = fl.Workers
	if fl.Snapshots != "" {
		st, err := snapshotStorage(ctx, dataDir, fl.Snapshots, log)
		if err != nil {
			return rebuild.Options{}, err
		}
		opts.Storage = st
	}
	return opts, nil
}

// lockRebuild takes <data-dir>/rebuild.lock for this process (cmd names
// it in the message a second rebuild shows) or says who holds it.
func lockRebuild(dataDir, cmd string) (release func(), err error) {
	path := filepath.Join(dataDir, control.RebuildLockName)
	release, holder, err := control.Lock(path, control.Self(cmd, time.Now()))
	if errors.Is(err, control.ErrBusy) {
		return nil, control.Busy(fmt.Sprintf("a rebuild is already running in %s; wait for it to finish", holder))
	}
	return release, err
}

func (a *app) runRebuild(cmd *cobra.Command, fl rebuildFlags) error {
	now, err := a.now()
	if err != nil {
		return err
	}
	opts, err := rebuildOptions(cmd.Context(), a.DataDir, fl, now, a.logger)
	if err != nil {
		return err
	}
	opts.Logger = a.logger
	if fl.Fleet.URL != "" {
		return a.runFleetRebuild(cmd, fl, opts)
	}
	stderr := cmd.ErrOrStderr()
	if isTerminal(stderr) {
		opts.Progress = func(stage string, rows int64) { fmt.Fprintf(stderr, "\r\033[K%s: %d rows", stage, rows) }
	}
	if !fl.Create {
		if err := requireStore(a.DataDir); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(a.DataDir, 0o755); err != nil {
		return err
	}
	release, err := lockRebuild(a.DataDir, "mapthenet rebuild")
	if err != nil {
		return busyError{err}
	}
	defer func() { release() }()
	cleanSnapshotCopies(cmd.Context(), opts.Storage, a.logger)

	store, err := openStore(a.DataDir, shard.Options{Graph: rebuild.StoreOptions(graph.Options{Logger: a.logger}), Create: fl.Create})
	if errors.Is(err, graph.ErrLocked) {
		// A crawl (most likely) holds the store: it runs the rebuild and
		// takes the rebuild lock itself.
		release()
		release = func() {}
		m, err := a.rebuildInCrawl(cmd, RebuildRequest{Now: now, Flags: fl})
		if err != nil {
			return err
		}
		printRebuildSummary(cmd.OutOrStdout(), m, snapshot.Local(a.DataDir).Location(m.ID, ""), opts.Storage)
		return nil
	}
	if err != nil {
		return err
	}
	defer store.Close()
	ownerPath := filepath.Join(a.DataDir, control.StoreOwnerName)
	if err := control.WriteOwner(ownerPath, control.Self("mapthenet rebuild", time.Now())); err != nil {
		a.logger.Warn("cannot say who holds the store", "err", err)
	}
	defer os.Remove(ownerPath)
	m, err := rebuild.Run(cmd.Context(), store, opts)
	if opts.Progress != nil {
		fmt.Fprint(stderr, "\r\033[K")
	}
	if err != nil {
		if errors.Is(err, snapshot.ErrBusy) {
			return busyError{err}
		}
		return err
	}
	printRebuildSummary(cmd.OutOrStdout(), m, snapshot.Local(a.DataDir).Location(m.ID, ""), opts.Storage)
	return store.Close()
}

// rebuildInCrawl asks the crawl that holds the store to run the rebuild.
func (a *app) rebuildInCrawl(cmd *cobra.Command, req RebuildRequest) (*data.Manifest, error) {
	sock := filepath.Join(a.DataDir, control.SocketName)
	holder := control.ReadOwner(filepath.Join(a.DataDir, control.StoreOwnerName))
	a.logger.Info("the store is in use: asking the running crawl to rebuild", "holder", holder.String(), "socket", sock)
	stderr := cmd.ErrOrStderr()
	if isTerminal(stderr) {
		fmt.Fprintf(stderr, "rebuilding inside %s (its log shows the stages)...\n", holder)
	}
	var m data.Manifest
	err := control.Call(cmd.Context(), sock, "rebuild", req, &m)
	switch {
	case errors.Is(err, control.ErrNoServer):
		return nil, busyError{fmt.Errorf("the store at %s is in use by %s, and no crawl answers on %s: "+
			"rebuild when it has finished", filepath.Join(a.DataDir, "store"), holder, sock)}
	case errors.Is(err, control.ErrBusy):
		return nil, busyError{err}
	case err != nil:
		return nil, err
	}
	// The stages were logged by the crawl; say them here too, so that the
	// cron job's own log has them.
	for _, st := range m.Stages {
		a.logger.Info("rebuild stage done", "stage", st.Stage, "rows", st.Rows, "seconds", st.Seconds, "ran_in", holder.String())
	}
	return &m, nil
}

func printRebuildSummary(w io.Writer, m *data.Manifest, dir string, st snapshot.Storage) {
	total := 0.0
	for _, s := range m.Stages {
		total += s.Seconds
	}
	fmt.Fprintf(w, "snapshot %s (as of %s) in %s\n", m.ID, m.AsOf.Format("2006-01-02 15:04:05Z07:00"), dir)
	for _, c := range snapshot.Copies(st) {
		fmt.Fprintf(w, "  copy: %s\n", c.Location(m.ID, ""))
	}
	fmt.Fprintf(w, "  %d domains, %d ranked; %d edges; %d link words; %d visits; %d scheduled\n",
		m.Counts[data.DomainsFile], m.Rank.Ranked, m.Counts[data.EdgesFile], m.Counts[data.LinkWordsFile],
		m.Counts[data.VisitsFile], m.Counts[data.ScheduleFile])
	printPageRank(w, m.Rank.Iterations, m.Rank.Extrapolations, m.Rank.Residual)
	var parts []string
	for _, s := range m.Stages {
		parts = append(parts, fmt.Sprintf("%s %.2fs", s.Stage, s.Seconds))
	}
	fmt.Fprintf(w, "  %.2fs: %s\n", total, strings.Join(parts, ", "))
}

// addSnapshotsFlag adds --snapshots (config.toml key "snapshots": rebuild
// and remove read the same one).
func addSnapshotsFlag(f *pflag.FlagSet, p *string) {
	f.StringVar(p, "snapshots", "", "also keep every snapshot in this directory or s3://bucket/prefix (credentials and endpoint from AWS_* variables: README, \"Snapshots on S3-compatible storage\"); current moves there only once the whole snapshot is uploaded")
}

// snapshotStorage is where snapshots go with --snapshots LOCATION: the data
// directory's rebuilds/ and a copy at LOCATION (snapshot.Mirror of
// objstore's Storage), which is checked to be reachable now.
func snapshotStorage(ctx context.Context, dataDir, loc string, log *slog.Logger) (snapshot.Storage, error) {
	l, err := objstore.ParseLocation(loc)
	if err != nil {
		return nil, usageError{fmt.Errorf("--snapshots: %w", err)}
	}
	if !l.IsS3() {
		a, _ := filepath.Abs(l.Dir)
		b, _ := filepath.Abs(dataDir)
		if a == b {
			return nil, usagef("--snapshots %s: that is the data directory, whose rebuilds/ holds the snapshots anyway", loc)
		}
	}
	st, err := openSnapshotStore(ctx, loc)
	if err != nil {
		return nil, err
	}
	local := snapshot.Local(dataDir)
	return snapshot.Mirror(local, objstore.NewStorage(ctx, st, local.Location("", ""), log)), nil
}

// cleanSnapshotCopies removes what failed uploads left in the snapshot
// copies (objstore.RemoveIncomplete), with the rebuild lock held.
func cleanSnapshotCopies(ctx context.Context, st snapshot.Storage, log *slog.Logger) {
	for _, c := range snapshot.Copies(st) {
		if os, ok := c.(*objstore.Storage); ok {
			removed, err := objstore.RemoveIncomplete(ctx, os.Store())
			if err != nil {
				log.Warn("could not remove what failed uploads left", "store", os.Store().String(), "err", err)
			} else if len(removed) > 0 {
				log.Info("removed what failed uploads left", "store", os.Store().String(), "objects", removed)
			}
		}
	}
}
