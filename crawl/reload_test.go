package crawl

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
)

// writeSnapshot writes rebuilds/<id>/ with a schedule and a manifest made
// at created, and points rebuilds/current at it.
func writeSnapshot(t *testing.T, dir, id string, created time.Time, rows []data.ScheduleRow) {
	t.Helper()
	snap := filepath.Join(dir, "rebuilds", id)
	if err := os.MkdirAll(snap, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := parquet.WriteFile(filepath.Join(snap, data.ScheduleFile), rows); err != nil {
		t.Fatal(err)
	}
	m, _ := json.Marshal(data.Manifest{ID: id, CreatedAt: created,
		Stages: []data.StageTiming{{Stage: "snapshot", Seconds: 1}, {Stage: "commit", Seconds: 1}}})
	if err := os.WriteFile(filepath.Join(snap, data.ManifestFile), m, 0o644); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "rebuilds", "current.tmp")
	os.Remove(tmp)
	if err := os.Symlink(id, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "rebuilds", "current")); err != nil {
		t.Fatal(err)
	}
}

// A running crawl, busy with a visit, picks up the schedule a rebuild
// wrote meanwhile: it visits the newly due domain, visits again a domain
// whose earlier visit the snapshot saw, and skips one whose visit it did not.
func TestRunFollowsANewSchedule(t *testing.T) {
	w := newWeb(t)
	for _, d := range []string{"a.test", "new.test"} {
		w.html(d+"/", htmlPage())
	}
	arrived, release := make(chan struct{}), make(chan struct{})
	w.on("slow.test/", func(rw http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		rw.Header().Set("Content-Type", "text/html")
		rw.Write([]byte(htmlPage()))
	})
	fc := clockwork.NewFakeClock()
	t0 := fc.Now()
	dir := t.TempDir()
	due := func(d string, prio int64) data.ScheduleRow {
		return data.ScheduleRow{Domain: d, NextVisit: t0.Add(-time.Hour), Tier: 6, Pages: 1, Reason: data.ReasonRevisit, Priority: prio}
	}
	writeSnapshot(t, dir, "s1", t0.Add(-time.Hour), []data.ScheduleRow{due("a.test", 2), due("slow.test", 1)})

	gs := openStore(t)
	if err := gs.AddDomains([]string{"a.test", "slow.test", "new.test"}, t0, false); err != nil {
		t.Fatal(err)
	}
	store := &notifyingStore{Store: gs, recorded: make(chan string, 10)}
	opts := w.options()
	opts.Clock = fc
	opts.DataDir = dir
	opts.Now = t0
	opts.SitesInFlight = 1 // a.test, then slow.test
	reg, m := NewRegistry()
	opts.Metrics = m
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		stats Stats
		err   error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Run(ctx, store, opts)
		done <- result{s, err}
	}()
	<-arrived // a.test is done; slow.test is in flight
	if d := <-store.recorded; d != "a.test" {
		t.Fatalf("first recorded: %s", d)
	} // a.test is committed at t0
	// A rebuild two minutes on saw a.test's visit, not slow.test's (it
	// ends after the snapshot).
	writeSnapshot(t, dir, "s2", t0.Add(2*time.Minute+2*time.Second),
		[]data.ScheduleRow{due("a.test", 3), due("new.test", 2), due("slow.test", 1)})
	fc.Advance(2 * time.Minute)
	close(release) // slow.test ends; a minute has passed: the crawl looks
	// Then nothing is left: the loop waits on its idle timer.
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	homes := map[string]int{}
	for _, req := range w.requests() {
		if host, path, _ := strings.Cut(req, " "); path == "/" {
			homes[host]++
		}
	}
	if homes["a.test"] != 2 || homes["slow.test"] != 1 || homes["new.test"] != 1 || r.stats.Visits != 4 {
		t.Errorf("home pages read %v, stats %+v", homes, r.stats)
	}
	if got := gathered(t, reg)["mapthenet_crawl_schedule_loads_total"]; got != 2 {
		t.Errorf("schedules loaded: %v", got)
	}
}

// notifyingStore tells which visits it has recorded.
type notifyingStore struct {
	Store
	recorded chan string
}

func (s *notifyingStore) RecordVisits(vs []*data.VisitResult) error {
	err := s.Store.RecordVisits(vs)
	for _, v := range vs {
		s.recorded <- v.Domain
	}
	return err
}

func TestSnapshotTaken(t *testing.T) {
	dir := t.TempDir()
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	writeSnapshot(t, dir, "x", at, nil)
	got, ok := snapshotTaken(filepath.Join(dir, "rebuilds", "x", data.ManifestFile))
	if !ok || !got.Equal(at.Add(-2*time.Second)) {
		t.Errorf("%v %v", got, ok)
	}
	if _, ok := snapshotTaken(filepath.Join(dir, "missing.json")); ok {
		t.Error("a missing manifest gave a time")
	}
}
