package rebuild

import (
	"context"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
)

// TestVisitPolicyOverGraphStore follows what a site said through the real
// store into the snapshot: a block or a 429 on an inner page schedules the
// next visit after the block's 90 days or the Retry-After (the links read
// before it still count), and a site that opted out, answers 410 Gone, or
// has failed DNS for 90 days has no out-links in the next snapshot (it
// stays listed and ranked by the links of others).
func TestVisitPolicyOverGraphStore(t *testing.T) {
	s, err := graph.Open("", graph.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	record := func(name string, at time.Time, o data.Outcome, status int, retry time.Duration, links ...string) {
		t.Helper()
		v := &data.VisitResult{Domain: name, StartedAt: at, FinishedAt: at.Add(time.Minute),
			RobotsReadAt: at, RobotsStatus: 200, Outcome: o, HTTPStatus: status, Pages: 3,
			Complete: o == data.OutcomeOK, RetryAfter: retry}
		for _, l := range links {
			v.Links = append(v.Links, data.Link{Dst: l, Words: []string{"word"}})
		}
		if o == data.OutcomeOptedOut {
			v.OptedOut, v.Pages = true, 0
		}
		if err := s.RecordVisit(v); err != nil {
			t.Fatal(err)
		}
	}
	old := asOf.Add(-100 * day)
	// Every site first read fine, linking hub.example and each other.
	for _, d := range []string{"slow.example", "blocked.example", "optout.example", "gone.example", "dead.example"} {
		record(d, old, data.OutcomeOK, 200, 0, "hub.example", "fine.example")
	}
	record("fine.example", old, data.OutcomeOK, 200, 0, "hub.example", "optout.example")
	yesterday := asOf.Add(-day)
	record("slow.example", yesterday, data.OutcomeThrottled, 200, 200*day, "new-from-slow.example")
	record("blocked.example", yesterday, data.OutcomeBotProtection, 200, 0, "new-from-blocked.example")
	record("optout.example", yesterday, data.OutcomeOptedOut, 0, 0)
	record("gone.example", yesterday, data.OutcomeGone, 410, 0)
	for at := old.Add(day); !at.After(yesterday); at = at.Add(30 * day) {
		record("dead.example", at, data.OutcomeDNSError, 0, 0)
	}
	record("dead.example", old.Add(day).Add(graph.GoneAfter), data.OutcomeDNSError, 0, 0)

	dir := t.TempDir()
	if _, err := Run(context.Background(), shard.One(s), Options{DataDir: dir, Now: asOf, Tiers: testTiers}); err != nil {
		t.Fatal(err)
	}
	snap := mustOpen(t, dir, "")
	sched, err := snap.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	next := map[string]data.ScheduleRow{}
	for _, r := range sched {
		next[r.Domain] = r
	}
	for name, want := range map[string]time.Time{
		"slow.example":    yesterday.Add(200 * day), // the Retry-After of page 2
		"blocked.example": yesterday.Add(90 * day),  // the block of page 2
	} {
		if r := next[name]; r.Reason != data.ReasonRetry || !r.NextVisit.Equal(want) {
			t.Errorf("%s: %+v, want retry at %v", name, r, want)
		}
	}

	edges, err := snap.Edges()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]bool{}
	for _, e := range edges {
		if out[e.Src] == nil {
			out[e.Src] = map[string]bool{}
		}
		out[e.Src][e.Dst] = true
	}
	want := map[string][]string{
		"slow.example":    {"hub.example", "fine.example", "new-from-slow.example"}, // added, not replaced
		"blocked.example": {"hub.example", "fine.example", "new-from-blocked.example"},
		"fine.example":    {"hub.example", "optout.example"},
	}
	for src, dsts := range want {
		if len(out[src]) != len(dsts) {
			t.Errorf("%s links to %v, want %v", src, out[src], dsts)
		}
		for _, d := range dsts {
			if !out[src][d] {
				t.Errorf("%s lost its link to %s", src, d)
			}
		}
	}
	for _, src := range []string{"optout.example", "gone.example", "dead.example"} {
		if len(out[src]) != 0 {
			t.Errorf("%s still links to %v", src, out[src])
		}
	}
	words, err := snap.LinkWords()
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range words {
		// hub.example's "word" came from 6 sites; 3 of them are gone.
		if w.Domain == "hub.example" && w.Sites != 3 {
			t.Errorf("hub.example's link word from %d sites, want 3: %+v", w.Sites, w)
		}
	}
	domains, err := snap.Domains()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range domains {
		if d.Domain == "optout.example" && (!d.OptedOut || d.Rank == nil || d.OutDomains != 0) {
			t.Errorf("optout.example must stay listed, and ranked by fine.example's link: %+v", d)
		}
	}
}
