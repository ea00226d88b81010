package rebuild

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// TestPurgeDomain (snapshot.PurgeDomain over a store's rebuilds): after a removal, no kept snapshot names the domain in
// any file, the manifests count what the files hold, and the domains it
// linked with lost it from their in/out counts.
func TestPurgeDomain(t *testing.T) {
	s, err := graph.Open("", graph.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	visit := func(name string, at time.Time, links ...string) {
		t.Helper()
		v := &data.VisitResult{Domain: name, StartedAt: at, FinishedAt: at.Add(time.Minute), RobotsReadAt: at, RobotsStatus: 200,
			Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 3, Complete: true}
		for _, l := range links {
			v.Links = append(v.Links, data.Link{Dst: l, Words: []string{"shared"}})
		}
		if err := s.RecordVisit(v); err != nil {
			t.Fatal(err)
		}
	}
	visit("a.example", asOf.Add(-3*day), "b.example", "c.example", "bad.example")
	visit("b.example", asOf.Add(-3*day), "bad.example", "c.example")
	visit("c.example", asOf.Add(-3*day), "bad.example", "a.example")
	visit("bad.example", asOf.Add(-3*day), "a.example", "b.example")
	dir := t.TempDir()
	for _, at := range []time.Time{asOf.Add(-day), asOf} {
		if _, err := Run(context.Background(), shard.One(s), Options{DataDir: dir, Now: at, Tiers: testTiers}); err != nil {
			t.Fatal(err)
		}
	}
	before := mustOpen(t, dir, "")
	domainsBefore, _ := before.Domains()
	inBefore := map[string]int64{}
	for _, d := range domainsBefore {
		inBefore[d.Domain] = d.InDomains
	}
	modeBefore, _ := os.Stat(before.Location(data.EdgesFile))

	if err := s.RemoveDomain("bad.example", "test", "none", asOf); err != nil {
		t.Fatal(err)
	}
	res, err := snapshot.PurgeDomain(context.Background(), dir, "bad.example")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Snapshots) != 2 || res.Rows == 0 {
		t.Fatalf("purged %+v, want both snapshots", res)
	}
	ids, _ := snapshot.Local(dir).List()
	for _, id := range ids {
		snap := mustOpen(t, dir, id)
		counts := map[string]int64{}
		domains, err := snap.Domains()
		if err != nil {
			t.Fatal(err)
		}
		counts[data.DomainsFile] = int64(len(domains))
		for _, d := range domains {
			if d.Domain == "bad.example" {
				t.Errorf("%s: domains.parquet still has it", id)
			}
			// a and b each lost one followed in-link (from bad), c none
			// (bad did not link it); a, b and c lost an out-link to bad.
			want := map[string]int64{"a.example": inBefore["a.example"] - 1, "b.example": inBefore["b.example"] - 1, "c.example": inBefore["c.example"]}
			if w, ok := want[d.Domain]; ok && (d.InDomains != w || d.OutDomains != int64(map[string]int{"a.example": 2, "b.example": 1, "c.example": 1}[d.Domain])) {
				t.Errorf("%s: %s in %d out %d, want in %d", id, d.Domain, d.InDomains, d.OutDomains, w)
			}
		}
		edges, _ := snap.Edges()
		counts[data.EdgesFile] = int64(len(edges))
		for _, e := range edges {
			if e.Src == "bad.example" || e.Dst == "bad.example" {
				t.Errorf("%s: edge %s → %s", id, e.Src, e.Dst)
			}
		}
		words, _ := snap.LinkWords()
		counts[data.LinkWordsFile] = int64(len(words))
		for _, w := range words {
			if w.Domain == "bad.example" {
				t.Errorf("%s: link word %+v", id, w)
			}
		}
		visits, _ := snap.Visits()
		counts[data.VisitsFile] = int64(len(visits))
		for _, v := range visits {
			if v.Domain == "bad.example" {
				t.Errorf("%s: visit %+v", id, v)
			}
		}
		sched, _ := snap.Schedule()
		counts[data.ScheduleFile] = int64(len(sched))
		for _, r := range sched {
			if r.Domain == "bad.example" {
				t.Errorf("%s: schedule row %+v", id, r)
			}
		}
		m, err := snapshot.ReadManifest(snapshot.Local(dir), id)
		if err != nil {
			t.Fatal(err)
		}
		for f, n := range counts {
			if m.Counts[f] != n {
				t.Errorf("%s: manifest counts %d rows of %s, the file has %d", id, m.Counts[f], f, n)
			}
		}
		entries, _ := os.ReadDir(snap.Location(""))
		for _, e := range entries {
			if e.Name()[0] == '.' {
				t.Errorf("%s: %s left behind", id, e.Name())
			}
		}
	}
	if st, _ := os.Stat(before.Location(data.EdgesFile)); st.Mode() != modeBefore.Mode() {
		t.Errorf("mode %v, was %v", st.Mode(), modeBefore.Mode())
	}
	// Again: nothing left to do, nothing rewritten.
	if res, err := snapshot.PurgeDomain(context.Background(), dir, "bad.example"); err != nil || len(res.Snapshots) != 0 {
		t.Errorf("second purge: %+v, %v", res, err)
	}
	// The next rebuild does not bring it back.
	if _, err := Run(context.Background(), shard.One(s), Options{DataDir: dir, Now: asOf.Add(day), Tiers: testTiers}); err != nil {
		t.Fatal(err)
	}
	domains, _ := mustOpen(t, dir, "").Domains()
	for _, d := range domains {
		if d.Domain == "bad.example" {
			t.Error("the next rebuild lists it again")
		}
	}
}
