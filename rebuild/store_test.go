package rebuild

import (
	"context"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
)

// TestRunOverGraphStore rebuilds from the real store (in memory): the
// store's rules (nofollow, FollowedIn, retry times) meet the rebuild's.
func TestRunOverGraphStore(t *testing.T) {
	s, err := graph.Open("", graph.Options{Create: true, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.AddDomains([]string{"seed.example"}, asOf.Add(-10*day), true); err != nil {
		t.Fatal(err)
	}
	visit := func(name string, ago time.Duration, links ...data.Link) {
		t.Helper()
		v := &data.VisitResult{Domain: name, StartedAt: asOf.Add(-ago), FinishedAt: asOf.Add(-ago + time.Minute),
			RobotsReadAt: asOf.Add(-ago), RobotsStatus: 200, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 3, Complete: true, Links: links}
		if err := s.RecordVisit(v); err != nil {
			t.Fatal(err)
		}
	}
	visit("seed.example", 5*day, data.Link{Dst: "x.example", Words: []string{"news"}}, data.Link{Dst: "quiet.example", Nofollow: true})
	visit("y.example", 4*day, data.Link{Dst: "x.example", Words: []string{"news"}})
	visit("z.example", 3*day, data.Link{Dst: "x.example", Words: []string{"news"}}, data.Link{Dst: "y.example"})
	if err := s.RecordVisit(&data.VisitResult{Domain: "w.example", StartedAt: asOf.Add(-day), FinishedAt: asOf.Add(-day),
		Outcome: data.OutcomeDNSError, Error: "no such host"}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	m, err := Run(context.Background(), shard.One(s), Options{DataDir: dir, Now: asOf, Tiers: testTiers})
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts[data.DomainsFile] != 6 || m.Counts[data.EdgesFile] != 5 || m.Counts[data.VisitsFile] != 4 || m.Rank.Ranked != 2 {
		t.Errorf("counts %v, ranked %d", m.Counts, m.Rank.Ranked)
	}
	snap := mustOpen(t, dir, "")
	sched, err := snap.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]data.ScheduleRow{}
	for _, r := range sched {
		got[r.Domain] = r
	}
	want := map[string]struct {
		reason string
		next   time.Time
	}{
		"x.example":    {"new", asOf},
		"seed.example": {"revisit", asOf.Add(-5*day + 365*day)}, // unranked: last tier
		"y.example":    {"revisit", asOf.Add(-4*day + 21*day)},  // rank 2: tier 2
		"z.example":    {"revisit", asOf.Add(-3*day + 365*day)},
		"w.example":    {"retry", asOf}, // DNS error: 1 day
	}
	if len(got) != len(want) {
		t.Errorf("schedule has %d rows, want %d (quiet.example, nofollow only, has none): %v", len(got), len(want), sched)
	}
	for name, w := range want {
		r, ok := got[name]
		if !ok || r.Reason != w.reason || !r.NextVisit.Equal(w.next) {
			t.Errorf("%s: %+v, want %s at %v", name, r, w.reason, w.next)
		}
	}
	words, err := snap.LinkWords()
	if err != nil {
		t.Fatal(err)
	}
	if len(words) != 1 || words[0] != (data.LinkWordRow{Domain: "x.example", Word: "news", Sites: 3}) {
		t.Errorf("link words %+v", words)
	}
	domains, err := snap.Domains()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range domains {
		if d.Domain == "quiet.example" && (d.Rank != nil || d.NextVisit != nil || d.InDomains != 0) {
			t.Errorf("quiet.example (nofollow only): %+v", d)
		}
		if d.Domain == "x.example" && (d.Rank == nil || *d.Rank != 1 || d.InDomains != 3) {
			t.Errorf("x.example: %+v", d)
		}
	}
}
