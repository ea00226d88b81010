// Package fleetnode puts the crawl, the sharded store and the snapshot
// store together as members of a fleet (package fleet, DESIGN.md "Fleet
// coordination"): Handler is a crawl node's fleet.Handler (take a shard:
// restore its latest copy, fence it, add its seeds, let the crawl work it;
// give it up; export it for a fleet rebuild and back it up), PullSchedule
// brings the fleet's current schedule (the partitions of the shards the
// node holds) into a node's data directory, and
// Rebuild is `mapthenet rebuild --fleet`: the barrier, the merge of the
// parts, the publication.
package fleetnode

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
)

// BackupsPrefix is where shard owners keep their shards' backups in the
// snapshot store: backups/shard=NN/<token>.badger (Badger's backup stream
// of the shard, graph.Store.Backup), the latest named by the shard's
// state in etcd (fleet.ShardState.Backup).
const BackupsPrefix = "backups/"

// HoldOffFile is where, in a node's data directory, the sites' waits
// that etcd did not take yet are kept (fleet.NodeOptions.HoldOffFile).
const HoldOffFile = "fleet-holdoffs.json"

// BackupKey is the key of shard's backup made under fencing token token.
func BackupKey(shard int, token int64) string {
	return fmt.Sprintf("%s%s/%d.badger", BackupsPrefix, rebuild.PartDir(shard), token)
}

// Options configure a Handler.
type Options struct {
	// Store has every shard of the fleet, local copies, best opened with
	// shard.Options.ReadOnlyShards: the handler opens a shard for writing
	// when the node takes it and read-only again when the node gives it
	// up, so the shards the node does not hold cost no compactors,
	// memtables or logs (Stop returns any shard it ends to read-only).
	Store *shard.Store
	// Seeds are the run's seed domains (normalized): each shard's are
	// added to its store, as seeds, when the node takes it.
	Seeds   []string
	SeedsAt time.Time
	// Snapshots is the fleet's snapshot store: export parts and shard
	// backups go there.
	Snapshots objstore.Store
	// TmpDir stages exports and backups (in the data directory). Only
	// this node uses it: NewHandler removes what a killed node left there.
	TmpDir string
	// DataDir is the node's data directory: a shard taken gets its
	// schedule partition added to the pulled snapshot there
	// (AddPartitions). "": none added (PullSchedule's next run does it).
	DataDir string
	Clock   clockwork.Clock // nil: the real clock
	Logger  *slog.Logger    // nil: discard
}

// Handler is a crawl node's fleet.Handler. Call SetGate with the node
// once it has started (the node needs the handler first).
type Handler struct {
	o     Options
	crawl *crawl.Fleet

	mu     sync.Mutex
	gate   fleet.Gate
	fences map[int]fleet.Fence // of the shards held
	// backedUp: per shard held, the store version (graph.Store.Version)
	// up to which the backup its state in etcd names holds everything; a
	// clean handoff with the version unchanged makes no new backup.
	backedUp map[int]uint64
	backups  map[int]backupsRunning
	// leaving: the node is leaving the fleet (Leaving): a shard given up
	// is closed, not opened read-only again.
	leaving bool
}

// backupsRunning are a shard's backups under way; overlap: two ran at
// once, so which one the snapshot store kept is not known.
type backupsRunning struct {
	n       int
	overlap bool
}

var _ fleet.Handler = (*Handler)(nil)

// NewHandler makes the handler. Every shard of o.Store is fenced shut
// until the node takes it: nothing is written to a shard this node does
// not hold (a write to one fails with the fence's error, read-only or
// not).
func NewHandler(o Options) *Handler {
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	for i := range o.Store.Shards() {
		o.Store.SetFence(i, notHeld(i))
	}
	removeStaleTemp(o.TmpDir, o.Logger)
	h := &Handler{o: o, fences: map[int]fleet.Fence{}, backedUp: map[int]uint64{}, backups: map[int]backupsRunning{}}
	h.crawl = crawl.NewFleet(h, o.Store.ShardOf)
	return h
}

// Prefixes of the temporary directories of an export and of a backup
// (each followed by the shard's part directory name and a random tail).
const (
	exportTemp = ".export-"
	backupTemp = ".backup-"
)

// removeStaleTemp removes the export and backup directories a killed
// node left in dir: a part, a backup and an export's sort runs, up to
// the size of a shard each. The store's lock, held by the caller, makes
// this node the only one working in dir, so none of them is in use.
func removeStaleTemp(dir string, log *slog.Logger) {
	if dir == "" {
		return
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !(strings.HasPrefix(name, exportTemp) || strings.HasPrefix(name, backupTemp)) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
			log.Warn("could not remove what a killed node left", "dir", filepath.Join(dir, name), "err", err)
			continue
		}
		log.Info("removed what a killed node left", "dir", filepath.Join(dir, name))
	}
}

// Crawl is the crawl's side of the node: crawl.Options.Fleet.
func (h *Handler) Crawl() *crawl.Fleet { return h.crawl }

func (h *Handler) node() fleet.Gate {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.gate
}

// MaySend is the node's (crawl.FleetGate); no request before SetGate.
func (h *Handler) MaySend(s int) error {
	g := h.node()
	if g == nil {
		return &fleet.NotNowError{Shard: s, Err: fleet.ErrNoSession}
	}
	return g.MaySend(s)
}

// ReserveIP is the node's (crawl.FleetGate).
func (h *Handler) ReserveIP(ctx context.Context, ip netip.Addr, delay time.Duration) (time.Time, error) {
	g := h.node()
	if g == nil {
		return time.Time{}, &fleet.NotNowError{Shard: -1, Err: fleet.ErrNoSession}
	}
	return g.ReserveIP(ctx, ip, delay)
}

// SetGate gives the handler the node (for PutShardState).
func (h *Handler) SetGate(g fleet.Gate) {
	h.mu.Lock()
	h.gate = g
	h.mu.Unlock()
}

func notHeld(i int) func() error {
	return func() error { return &fleet.NotNowError{Shard: i, Err: fleet.ErrNotOwner} }
}

// Start takes shard g.Shard: it is opened for writing, its local copy is
// replaced by the backup its last owner left when that copy is not the
// latest (the recorded tokens differ), then fenced with g's fence, marked with g's token, given its
// seeds, and opened to the crawl (requests wait for Ready).
func (h *Handler) Start(ctx context.Context, g fleet.Grant) error {
	s := g.Shard
	if s < 0 || s >= h.o.Store.Shards() {
		return fmt.Errorf("shard %d: the local store has %d shards (the fleet's config and this data dir disagree)", s, h.o.Store.Shards())
	}
	p := g.Previous
	stale := func(local int64, ok bool) bool { return p != nil && (!ok || local != p.Token) }
	// A local copy older than the backup the shard's state names is
	// replaced while it is still read-only, so that the shard is opened
	// for writing once, after the restore, not also before it (a writable
	// open allocates and zeroes its memtable arena: 21 MiB at 64 shards).
	restored := false
	if local, ok, err := h.o.Store.Shard(s).OwnerToken(); err == nil && p != nil && p.Backup != "" && stale(local, ok) {
		if err := h.restore(ctx, s, p); err != nil {
			h.shut(s)
			return err
		}
		restored = true
	}
	// Written from now on: open for writing (a shard that a failed
	// reopen left closed opens again here), still fenced shut.
	if err := h.o.Store.SetWritable(s, true); err != nil {
		return err
	}
	local, ok, err := h.o.Store.Shard(s).OwnerToken()
	if err != nil {
		h.shut(s)
		return fmt.Errorf("shard %d: %w", s, err)
	}
	if !restored && p != nil && p.Backup != "" && stale(local, ok) {
		// The read-only copy could not tell (a shard a failed reopen left closed).
		if err := h.restore(ctx, s, p); err != nil {
			h.shut(s)
			return err
		}
		restored = true
	} else if !restored && stale(local, ok) {
		h.o.Logger.Warn("taking a shard whose last owner left no backup: the local copy is used", "shard", s,
			"local_token", local, "last_owner", p.Node, "last_token", p.Token)
	}
	// CheckHeld, not Check: the visits finished before Stop, and Stop's
	// backup, are still written while the node gives the shard up.
	h.o.Store.SetFence(s, g.Fence.CheckHeld)
	sh := h.o.Store.Shard(s)
	if err := sh.SetOwnerToken(g.Token); err != nil {
		h.shut(s)
		return fmt.Errorf("shard %d: recording the fencing token: %w", s, err)
	}
	h.mu.Lock()
	delete(h.backedUp, s)
	h.mu.Unlock()
	if restored {
		// The copy is the backup the shard's state names, but for the
		// token (each owner records its own): until something else is
		// written, a handoff leaves that backup to the next owner.
		if v, err := sh.Version(); err == nil {
			h.setBackedUp(s, v)
		}
	}
	var seeds []string
	for _, d := range h.o.Seeds {
		if h.o.Store.ShardOf(d) == s {
			seeds = append(seeds, d)
		}
	}
	if len(seeds) > 0 {
		if err := sh.AddDomains(seeds, h.o.SeedsAt, true); err != nil {
			h.shut(s)
			return fmt.Errorf("shard %d: adding its seeds: %w", s, err)
		}
	}
	h.mu.Lock()
	h.fences[s] = g.Fence
	h.mu.Unlock()
	if h.o.DataDir != "" && h.o.Snapshots != nil {
		// The shard's part of the schedule, before the crawl reads it.
		if _, err := AddPartitions(ctx, h.o.Snapshots, h.o.DataDir, []int{s}); err != nil {
			h.o.Logger.Warn("could not pull a shard's schedule partition (its seeds are crawled; the next --recheck tries again)",
				"shard", s, "err", err)
		}
	}
	h.crawl.Open(s, restored, g.HoldOff)
	return nil
}

// Ready gives the crawl the shard's hold-offs read after the takeover
// wait and wakes it: its requests may start.
func (h *Handler) Ready(s int, holdOffs map[string]time.Time) { h.crawl.HoldOffs(s, holdOffs) }

// Held lists the shards the node holds now (taken, not yet given up), in
// no order: the schedule partitions it pulls.
func (h *Handler) Held() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]int, 0, len(h.fences))
	for s := range h.fences {
		out = append(out, s)
	}
	return out
}

// restore replaces shard s's local copy with the backup p names.
func (h *Handler) restore(ctx context.Context, s int, p *fleet.ShardState) error {
	if h.o.Snapshots == nil {
		return fmt.Errorf("shard %d: its latest copy is the backup %s, and this node has no --snapshots store to read it from", s, p.Backup)
	}
	start := time.Now()
	obj, err := h.o.Snapshots.Open(ctx, p.Backup)
	if err != nil {
		return fmt.Errorf("shard %d: opening its backup: %w", s, err)
	}
	defer obj.Close()
	if err := h.o.Store.ReplaceShard(s, obj, obj.Size(), h.o.Logger); err != nil {
		return fmt.Errorf("shard %d: restoring its backup %s: %w", s, p.Backup, err)
	}
	h.o.Logger.Info("restored shard from its last owner's backup", "shard", s, "backup", p.Backup,
		"last_owner", p.Node, "bytes", obj.Size(), "seconds", time.Since(start).Seconds())
	return nil
}

// HoldOff records a site's wait fleet-wide, held or not
// (crawl.FleetGate).
func (h *Handler) HoldOff(ctx context.Context, s int, domain string, until time.Time) error {
	g := h.node()
	if g == nil {
		return &fleet.NotNowError{Shard: s, Err: fleet.ErrNoSession}
	}
	return g.PutHoldOff(ctx, s, domain, until)
}

// Stop ends the crawl's work on shard: its visits in flight are
// abandoned (their next owner makes them); when the node gives the shard
// up cleanly, a backup of it goes to the snapshot store for the next
// owner; then the shard is fenced shut and closed for writing (all
// written is in its files when Stop returns, before the node releases it).
func (h *Handler) Stop(s int, lost bool) time.Time {
	h.mu.Lock()
	f, held := h.fences[s]
	delete(h.fences, s)
	h.mu.Unlock()
	quiet := h.crawl.Close(s)
	if !lost && held && h.o.Snapshots != nil && h.unchanged(s) {
		h.o.Logger.Info("no backup of a shard given up: nothing written since its last backup, which its next owner restores", "shard", s)
	} else if !lost && held && h.o.Snapshots != nil {
		// A clean handoff: the next owner restores this backup, so the
		// visits made since the last export move with the shard.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := h.backup(ctx, s, f); err != nil {
			h.o.Logger.Warn("no backup of a shard given up: its next owner starts from the last one and makes the visits since again",
				"shard", s, "err", err)
		}
		cancel()
	}
	h.shut(s)
	h.mu.Lock()
	delete(h.backedUp, s)
	h.mu.Unlock()
	return quiet
}

// Leaving tells the handler that the node is leaving the fleet and the
// process will close the store (crawl --fleet's exit, before the node's
// Close gives its shards up): each shard given up from now on is closed
// (shard.Store.CloseShard), not opened read-only again for nothing (at
// 64 shards, 64 opens of a Badger store, each a few ms of CPU). A shard
// taken after Leaving is opened as ever.
func (h *Handler) Leaving() {
	h.mu.Lock()
	h.leaving = true
	h.mu.Unlock()
}

// shut fences shard s shut and opens it read-only again (its writable
// store is closed: flushed and synced), or, once the node is Leaving,
// leaves it closed. A shard that could not be opened read-only stays
// fenced shut, whatever it is open as.
func (h *Handler) shut(s int) {
	h.o.Store.SetFence(s, notHeld(s))
	h.mu.Lock()
	leaving := h.leaving
	h.mu.Unlock()
	if leaving {
		if err := h.o.Store.CloseShard(s); err != nil {
			h.o.Logger.Warn("could not close a shard given up (it stays fenced shut)", "shard", s, "err", err)
		}
		return
	}
	if err := h.o.Store.SetWritable(s, false); err != nil {
		h.o.Logger.Warn("could not open a shard given up read-only (it stays fenced shut)", "shard", s, "err", err)
	}
}

// setBackedUp records that shard s's latest backup holds everything up
// to version v.
func (h *Handler) setBackedUp(s int, v uint64) {
	h.mu.Lock()
	h.backedUp[s] = v
	h.mu.Unlock()
}

// beginBackup notes that a backup of shard s starts: from now on its
// store is not known to be unchanged since its last one.
func (h *Handler) beginBackup(s int) {
	h.mu.Lock()
	b := h.backups[s]
	b.overlap = b.overlap || b.n > 0
	b.n++
	h.backups[s] = b
	delete(h.backedUp, s)
	h.mu.Unlock()
}

// endBackup notes that a backup of shard s begun at version v ended,
// uploaded and recorded as the shard's state when ok. Backups of one
// shard that overlapped (two exports at once) record nothing: the one
// the snapshot store kept is not known.
func (h *Handler) endBackup(s int, v uint64, ok bool) {
	h.mu.Lock()
	b := h.backups[s]
	b.n--
	if ok && !b.overlap {
		h.backedUp[s] = v
	}
	if b.n <= 0 {
		delete(h.backups, s)
	} else {
		h.backups[s] = b
	}
	h.mu.Unlock()
}

// unchanged reports whether shard s's store has had no write since the
// backup its state names (so a handoff needs no new one).
func (h *Handler) unchanged(s int) bool {
	h.mu.Lock()
	v, ok := h.backedUp[s]
	h.mu.Unlock()
	if !ok {
		return false
	}
	now, err := h.o.Store.Shard(s).Version()
	return err == nil && now == v
}

// backup uploads a backup of shard s to the snapshot store and records it
// as the shard's state under holding f.
func (h *Handler) backup(ctx context.Context, s int, f fleet.Fence) error {
	tmp, err := os.MkdirTemp(h.o.TmpDir, backupTemp+rebuild.PartDir(s)+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	path := filepath.Join(tmp, "backup.badger")
	sh := h.o.Store.Shard(s)
	h.beginBackup(s)
	v, err := sh.Version() // before the backup: it holds all up to here
	if err == nil {
		err = writeBackup(sh, path)
	}
	if err == nil {
		err = h.putBackup(ctx, s, f, path)
	}
	h.endBackup(s, v, err == nil)
	return err
}

// putBackup uploads the backup file path of shard s and records it.
func (h *Handler) putBackup(ctx context.Context, s int, f fleet.Fence, path string) error {
	key := BackupKey(s, f.Token)
	if err := objstore.PutFile(ctx, h.o.Snapshots, key, path); err != nil {
		return fmt.Errorf("uploading its backup: %w", err)
	}
	if gate := h.node(); gate != nil {
		at := time.Now().UTC()
		if err := gate.PutShardState(ctx, f, fleet.ShardState{Backup: key, BackupAt: &at}); err != nil {
			return fmt.Errorf("recording its backup: %w", err)
		}
		removed, err := PruneBackups(ctx, h.o.Snapshots, s, f.Token)
		if err != nil {
			h.o.Logger.Warn("could not remove a shard's old backups (the next backup tries again)", "shard", s, "err", err)
		} else if len(removed) > 0 {
			h.o.Logger.Info("removed a shard's old backups", "shard", s, "removed", removed)
		}
	}
	return nil
}

// PruneBackups removes shard's backups older than the two latest once the
// backup made under token latest is recorded as the shard's state (only
// then: until it is, the state names an older one). It keeps that one,
// the one before it (a node that read the state just before may be
// restoring from it while the new one is recorded) and any of a later
// token (a later owner's: this node may have lost the shard meanwhile),
// so the backup the state names is never among those removed. Keys that
// are not <token>.badger are left alone. It returns the keys removed.
func PruneBackups(ctx context.Context, st objstore.Store, shard int, latest int64) ([]string, error) {
	prefix := BackupsPrefix + rebuild.PartDir(shard) + "/"
	infos, err := st.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	tokens := map[string]int64{}
	var before int64 = -1 // the latest token below latest
	for _, in := range infos {
		name, ok := strings.CutSuffix(strings.TrimPrefix(in.Key, prefix), ".badger")
		t, err := strconv.ParseInt(name, 10, 64)
		if !ok || err != nil || strings.Contains(name, "/") || BackupKey(shard, t) != in.Key {
			continue
		}
		tokens[in.Key] = t
		if t < latest && t > before {
			before = t
		}
	}
	var removed []string
	for key, t := range tokens {
		if t < before {
			if err := st.Delete(ctx, key); err != nil {
				return removed, err
			}
			removed = append(removed, key)
		}
	}
	slices.Sort(removed)
	return removed, nil
}

// Export writes shard req's part (rebuild.ExportPart of one view of the
// shard) to the snapshot store under req.Dest, then a backup of the shard
// taken after that view (so it holds at least what the part holds) under
// BackupKey, and records the backup as the shard's state.
func (h *Handler) Export(ctx context.Context, req fleet.ExportRequest, f fleet.Fence) (fleet.Part, error) {
	s := f.Shard
	if h.o.Snapshots == nil {
		return fleet.Part{}, errors.New("this node has no --snapshots store to export to")
	}
	if err := f.Check(); err != nil {
		return fleet.Part{}, err
	}
	tmp, err := os.MkdirTemp(h.o.TmpDir, exportTemp+rebuild.PartDir(s)+"-")
	if err != nil {
		return fleet.Part{}, err
	}
	defer os.RemoveAll(tmp)
	sh := h.o.Store.Shard(s)
	view, err := sh.Snapshot()
	if err != nil {
		return fleet.Part{}, fmt.Errorf("shard %d: %w", s, err)
	}
	partDir := filepath.Join(tmp, rebuild.PartDir(s))
	// The view sorted through runs in tmp, beside the part (which is
	// uploaded whole): memory stays a chunk whatever the shard's size.
	part, err := rebuild.ExportPart(ctx, view, partDir, rebuild.PartInfo{Shard: s, Shards: h.o.Store.Shards(), AsOf: time.Now(),
		Platforms: h.o.Store.Router().Platforms()}, graph.Spill{Dir: tmp})
	view.Close()
	if err != nil {
		return fleet.Part{}, fmt.Errorf("shard %d: export: %w", s, err)
	}
	backup := filepath.Join(tmp, "backup.badger")
	h.beginBackup(s)
	version, err := sh.Version() // before the backup: it holds all up to here
	if err == nil {
		err = writeBackup(sh, backup)
	}
	if err != nil {
		h.endBackup(s, 0, false)
		return fleet.Part{}, fmt.Errorf("shard %d: backup: %w", s, err)
	}
	prefix := req.Dest + rebuild.PartDir(s) + "/"
	if err := objstore.UploadDir(ctx, h.o.Snapshots, prefix, partDir, data.PartManifestFile, h.o.Logger); err != nil {
		h.endBackup(s, 0, false)
		return fleet.Part{}, fmt.Errorf("shard %d: uploading its part: %w", s, err)
	}
	err = h.putBackup(ctx, s, f, backup)
	h.endBackup(s, version, err == nil)
	if err != nil {
		return fleet.Part{}, fmt.Errorf("shard %d: %w", s, err)
	}
	return fleet.Part{URI: prefix, Rows: part.Manifest.Counts[data.PartDomainsFile]}, nil
}

// writeBackup writes sh's backup stream to the file path, synced.
func writeBackup(sh *graph.Store, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	_, err = sh.Backup(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
