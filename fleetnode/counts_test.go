package fleetnode

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet/fleettest"
	"github.com/mapthenet/mapthenet/shard"
)

func visitAt(domain string, at time.Time) *data.VisitResult {
	return &data.VisitResult{Domain: domain, StartedAt: at, FinishedAt: at.Add(time.Second), RobotsReadAt: at, RobotsStatus: 200,
		Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 1, Complete: true}
}

// A node counts, per shard it holds, the due rows of its pulled schedule
// of domains visited before (due) and of domains never visited, with its
// unvisited seeds not in the schedule (waiting); a domain visited since
// the snapshot counts in neither. ReportCounts hands them to the fleet.
func TestCounts(t *testing.T) {
	const k = 2
	store, err := shard.Open(filepath.Join(t.TempDir(), "store"), shard.Options{Create: true, Shards: k})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var seeds []string
	for i := range 20 {
		seeds = append(seeds, fmt.Sprintf("site%02d.example", i))
	}
	if err := store.AddDomains(seeds, asOf.Add(-2*time.Hour), true); err != nil {
		t.Fatal(err)
	}
	if err := store.RecordVisits([]*data.VisitResult{visitAt("site00.example", asOf.Add(-time.Hour))}); err != nil {
		t.Fatal(err)
	}
	st := snapshotDir(t)
	m := publishSnapshot(t, store, st, asOf, true)

	node := t.TempDir()
	if _, _, err := PullSchedule(t.Context(), st, node, nil); err != nil {
		t.Fatal(err)
	}
	h := NewHandler(Options{Store: store, Seeds: append(seeds, "extra.example"), SeedsAt: asOf, Snapshots: st, DataDir: node, TmpDir: t.TempDir()})
	fake := fleettest.New(nil, 0)
	h.SetGate(fake)
	for s := range k {
		if _, err := fake.Grant(t.Context(), h, s, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.RecordVisits([]*data.VisitResult{visitAt("site01.example", asOf.Add(time.Hour))}); err != nil {
		t.Fatal(err)
	}
	want := make([]struct{ due, waiting int64 }, k)
	want[store.ShardOf("site00.example")].due++
	for _, d := range append(seeds[2:], "extra.example") {
		want[store.ShardOf(d)].waiting++
	}
	now := asOf.Add(1000 * 24 * time.Hour)
	got, err := h.Count(now)
	if err != nil {
		t.Fatal(err)
	}
	for s := range k {
		c := got[s]
		if c.Due != want[s].due || c.Waiting != want[s].waiting || c.Snapshot != m.ID || !c.At.Equal(now) {
			t.Errorf("shard %d: counts %+v, want due %d, waiting %d of snapshot %s", s, c, want[s].due, want[s].waiting, m.ID)
		}
	}
	if err := h.ReportCounts(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	for s := range k {
		if c, ok := fake.Counts(s); !ok || c.Due != want[s].due || c.Waiting != want[s].waiting {
			t.Errorf("shard %d: reported %+v (%v)", s, c, ok)
		}
	}
}
