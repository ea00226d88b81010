package crawl

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// writeSnapshot publishes snapshot id (of its creation time, when id is
// "") in the data directory dir with a schedule and a manifest made at
// created, points current at it and returns its id.
func writeSnapshot(t *testing.T, dir, id string, created time.Time, rows []data.ScheduleRow) string {
	t.Helper()
	if id == "" {
		id = snapshot.ID(created)
	}
	d := snapshot.Local(dir)
	b, err := snapshot.Begin(d, id)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	if _, err := b.WriteSchedule(rows); err != nil {
		t.Fatal(err)
	}
	m := &data.Manifest{ID: id, SchemaVersion: data.SchemaVersion, CreatedAt: created,
		Stages: []data.StageTiming{{Stage: "snapshot", Seconds: 1}, {Stage: "commit", Seconds: 1}}}
	if err := b.Commit(m); err != nil {
		t.Fatal(err)
	}
	if err := d.SetCurrent(id); err != nil {
		t.Fatal(err)
	}
	return id
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
	writeSnapshot(t, dir, "", t0.Add(-time.Hour), []data.ScheduleRow{due("a.test", 2), due("slow.test", 1)})

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
	writeSnapshot(t, dir, "", t0.Add(2*time.Minute+2*time.Second),
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
	id := writeSnapshot(t, dir, "", at, nil)
	got, ok := snapshotTaken(snapshot.Local(dir), id)
	if !ok || !got.Equal(at.Add(-2*time.Second)) {
		t.Errorf("%v %v", got, ok)
	}
	if _, ok := snapshotTaken(snapshot.Local(dir), "2020-01-01T000000Z"); ok {
		t.Error("a missing manifest gave a time")
	}
}
