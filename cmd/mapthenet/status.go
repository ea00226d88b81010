package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

func newStatusCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [--json]",
		Short: "What the crawl is doing now, and what the store and the current snapshot hold",
		Long: `status asks a running crawl over <data-dir>/crawl.sock what it is doing
(sites in flight, pages/s over the last minute and hour, the outcomes of
the last hour's visits, what is due and waiting in this run), and reads
the store's size and number of shards and the current snapshot (its age, what its schedule has
due now, in the next hour and in the next day, never-visited domains in
line, the next due time). With no crawl running it says so and reports
the rest. A socket that does not answer as a mapthenet crawl is an error.

--json prints {"data_dir", "now", "crawl": {...} | null, "store":
{"path", "exists", "bytes", "shards"}, "snapshot": {...} | null}; times RFC 3339 UTC.`,
		Example: `  mapthenet status
  mapthenet status --json | jq .crawl.pages_per_s_last_minute`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now, err := a.now()
			if err != nil {
				return err
			}
			st, err := readStatus(cmd.Context(), a.DataDir, now)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSONDoc(cmd.OutOrStdout(), st)
			}
			return st.write(cmd.OutOrStdout())
		},
	}
	addNowFlag(cmd, a)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON document (shape above)")
	return cmd
}

type statusReport struct {
	DataDir  string                `json:"data_dir"`
	Now      time.Time             `json:"now"`
	Crawl    *crawl.ActivityReport `json:"crawl"`
	Store    storeStatus           `json:"store"`
	Snapshot *snapshotStatus       `json:"snapshot"`
}

type storeStatus struct {
	Path   string `json:"path"`
	Exists bool   `json:"exists"`
	Bytes  int64  `json:"bytes"`
	Shards int    `json:"shards"` // K (package shard); 0 when there is no store
}

type snapshotStatus struct {
	ID           string     `json:"id"`
	AsOf         time.Time  `json:"as_of"`
	AgeSeconds   float64    `json:"age_s"`
	Domains      int64      `json:"domains"`
	Edges        int64      `json:"edges"`
	Scheduled    int        `json:"scheduled"`
	DueNow       int        `json:"due_now"`
	DueNextHour  int        `json:"due_next_hour"` // due after now, within the hour
	DueNextDay   int        `json:"due_next_day"`  // due after now, within 24 hours
	NeverVisited int        `json:"never_visited"` // rows with reason new
	NextDue      *time.Time `json:"next_due"`      // the first time after now that a row falls due
}

// readStatus gathers the report. Only a broken socket or a broken snapshot
// is an error; a missing crawl, store or snapshot is reported as such.
func readStatus(ctx context.Context, dataDir string, now time.Time) (*statusReport, error) {
	st := &statusReport{DataDir: dataDir, Now: now}
	sock := filepath.Join(dataDir, control.SocketName)
	var act crawl.ActivityReport
	callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	switch err := control.Call(callCtx, sock, "status", nil, &act); {
	case err == nil:
		st.Crawl = &act
	case errors.Is(err, control.ErrNoServer):
		// No crawl is running (or a stale socket): the rest still tells.
	default:
		return nil, fmt.Errorf("%s does not answer as a mapthenet crawl: %w", sock, err)
	}
	st.Store.Path = filepath.Join(dataDir, "store")
	st.Store.Bytes, st.Store.Exists = dirSize(st.Store.Path)
	if st.Store.Exists {
		st.Store.Shards = 1
		if l, sharded, err := shard.ReadLayout(st.Store.Path); err != nil {
			return nil, err
		} else if sharded {
			st.Store.Shards = l.Shards
		}
	}
	snap, err := snapshot.Open(dataDir, "")
	if errors.Is(err, snapshot.ErrNoSnapshot) {
		return st, nil // no snapshot yet
	}
	if err != nil {
		return nil, err
	}
	ss := &snapshotStatus{ID: snap.ID, AsOf: snap.Manifest.AsOf, AgeSeconds: now.Sub(snap.Manifest.AsOf).Seconds(),
		Domains: snap.Manifest.Counts[data.DomainsFile], Edges: snap.Manifest.Counts[data.EdgesFile]}
	rows, err := snap.Schedule()
	if err != nil {
		return nil, err
	}
	ss.Scheduled = len(rows)
	for _, r := range rows {
		nv := r.NextVisit
		if r.Reason == data.ReasonNew {
			ss.NeverVisited++
		}
		if !nv.After(now) {
			ss.DueNow++
			continue
		}
		if !nv.After(now.Add(time.Hour)) {
			ss.DueNextHour++
		}
		if !nv.After(now.Add(24 * time.Hour)) {
			ss.DueNextDay++
		}
		if ss.NextDue == nil || nv.Before(*ss.NextDue) {
			t := nv
			ss.NextDue = &t
		}
	}
	st.Snapshot = ss
	return st, nil
}

// dirSize sums the disk space the files under dir take, as du does
// (false: no such dir). Not their sizes: Badger preallocates its value
// log (2 GiB, sparse), which would swamp a small store's figure.
func dirSize(dir string) (int64, bool) {
	var n int64
	exists := false
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		exists = true
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += info.Size()
		}
		return nil
	})
	return n, exists
}

func (st *statusReport) write(w io.Writer) error {
	fmt.Fprintf(w, "data dir %s at %s\n", st.DataDir, snapshotTime(st.Now))
	if c := st.Crawl; c != nil {
		fmt.Fprintf(w, "crawl: running since %s (%s); %d sites in flight, %d due and %d waiting in this run\n",
			snapshotTime(c.StartedAt), roundDuration(time.Duration(c.UptimeSeconds*float64(time.Second))), c.SitesInFlight, c.Due, c.Waiting)
		fmt.Fprintf(w, "  pages/s: %.2f last minute, %.2f last hour; %d visits, %d pages since it started\n",
			c.PagesPerSecMin, c.PagesPerSecHour, c.Visits, c.Pages)
		fmt.Fprintf(w, "  last hour: %d visits%s\n", c.VisitsLastHour, outcomeCounts(c.OutcomesLastHour))
	} else {
		fmt.Fprintln(w, "crawl: not running")
	}
	if st.Store.Exists {
		fmt.Fprintf(w, "store: %s, %s, %d shard%s\n", st.Store.Path, humanize.IBytes(uint64(st.Store.Bytes)), st.Store.Shards,
			map[bool]string{true: "s"}[st.Store.Shards != 1])
	} else {
		fmt.Fprintf(w, "store: none at %s\n", st.Store.Path)
	}
	s := st.Snapshot
	if s == nil {
		fmt.Fprintln(w, "snapshot: none yet (mapthenet rebuild makes one)")
		return nil
	}
	fmt.Fprintf(w, "snapshot: %s, %s old; %d domains, %d edges\n", s.ID,
		roundDuration(time.Duration(s.AgeSeconds*float64(time.Second))), s.Domains, s.Edges)
	next := "nothing later"
	if s.NextDue != nil {
		next = snapshotTime(*s.NextDue)
	}
	_, err := fmt.Fprintf(w, "  schedule: %d due now, %d more in the next hour, %d in the next day; %d never visited in line; next due %s\n",
		s.DueNow, s.DueNextHour, s.DueNextDay, s.NeverVisited, next)
	return err
}

func outcomeCounts(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return ": " + strings.Join(parts, ", ")
}

func roundDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	}
	return d.Round(time.Second).String()
}
