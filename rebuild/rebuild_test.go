package rebuild

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
	"github.com/mapthenet/mapthenet/snapshot"
)

var asOf = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// testTiers spread the few ranks of the test graph over three tiers.
var testTiers = schedule.Tiers{
	{Number: 1, MaxRank: 1, RevisitDays: 10, Pages: 50},
	{Number: 2, MaxRank: 3, RevisitDays: 21, Pages: 20},
	{Number: 3, MaxRank: 0, RevisitDays: 365, Pages: 8},
}

func bp(b bool) *bool { return &b }

// smallGraph is the hand-computable store of the tests (ids have a gap at 7):
//
//	a → b, c (followed), e (nofollow)     b → a, c      d → b, c, g      h → a, c
//
// Followed in-links: a{b,h} b{a,d} c{a,b,d,h} g{d}; e has only a nofollow
// in-link; d, f, h have none. Link words to c: blue by a, b, d (3: kept),
// river by b, d, h (3: kept); to b: blue, sky, river once each (dropped).
func smallGraph() *fakeSource {
	t := func(d time.Duration) time.Time { return asOf.Add(d) }
	return &fakeSource{
		n: 9,
		domains: []data.DomainState{
			{ID: 0, Name: "a.example", FirstSeen: t(-30 * day), LastVisit: t(-5 * day), LastStatus: 200, LastOutcome: data.OutcomeOK,
				HTTPS: bp(true), IPv6: bp(false), ASN: 64500, NetworkOperator: "Example Net", FollowedIn: true, Seeded: true},
			{ID: 1, Name: "b.example", FirstSeen: t(-20 * day), LastVisit: t(-2 * day), LastStatus: 200, LastOutcome: data.OutcomeOK, FollowedIn: true},
			{ID: 2, Name: "c.example", FirstSeen: t(-20 * day), LastVisit: t(-1 * day), LastOutcome: data.OutcomeTimeout,
				Failures: 2, RetryAt: t(1 * day), FollowedIn: true},
			{ID: 3, Name: "d.example", FirstSeen: t(-10 * day), LastVisit: t(-3 * day), LastStatus: 200, LastOutcome: data.OutcomePartial, Seeded: true},
			{ID: 4, Name: "e.example", FirstSeen: t(-3 * day)},
			{ID: 5, Name: "f.example", FirstSeen: t(-1 * day), Seeded: true},
			{ID: 6, Name: "g.example", FirstSeen: t(-3 * day), FollowedIn: true},
			{ID: 8, Name: "h.example", FirstSeen: t(-40 * day), LastVisit: t(-4 * day), LastStatus: 200, LastOutcome: data.OutcomeOptedOut, OptedOut: true},
		},
		edges: []data.EdgeRecord{
			{SrcID: 0, DstID: 1, FirstSeen: t(-30 * day), LastSeen: t(-5 * day), Words: []string{"blue", "sky"}},
			{SrcID: 0, DstID: 2, FirstSeen: t(-30 * day), LastSeen: t(-5 * day), Words: []string{"blue"}},
			{SrcID: 0, DstID: 4, FirstSeen: t(-6 * day), LastSeen: t(-5 * day), Nofollow: true, Words: []string{"spam"}},
			{SrcID: 1, DstID: 0, FirstSeen: t(-20 * day), LastSeen: t(-2 * day), Words: []string{"home"}},
			{SrcID: 1, DstID: 2, FirstSeen: t(-20 * day), LastSeen: t(-2 * day), Sitewide: true, Words: []string{"blue", "river"}},
			{SrcID: 3, DstID: 1, FirstSeen: t(-10 * day), LastSeen: t(-3 * day), Words: []string{"river"}},
			{SrcID: 3, DstID: 2, FirstSeen: t(-10 * day), LastSeen: t(-3 * day), Words: []string{"blue", "river"}},
			{SrcID: 3, DstID: 6, FirstSeen: t(-10 * day), LastSeen: t(-3 * day), Words: []string{"new"}},
			{SrcID: 8, DstID: 0, FirstSeen: t(-40 * day), LastSeen: t(-30 * day), Words: []string{"home"}},
			{SrcID: 8, DstID: 2, FirstSeen: t(-40 * day), LastSeen: t(-30 * day), Words: []string{"river"}},
		},
		visits: []data.VisitLogEntry{
			{DomainID: 0, StartedAt: t(-15 * day), FinishedAt: t(-15*day + time.Minute), RobotsReadAt: t(-15 * day), RobotsStatus: 404,
				Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 8, Bytes: 81920},
			{DomainID: 0, StartedAt: t(-5 * day), FinishedAt: t(-5*day + 90*time.Second), RobotsReadAt: t(-5 * day), RobotsStatus: 200,
				Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 50, Bytes: 512000},
			{DomainID: 2, StartedAt: t(-1 * day), FinishedAt: t(-1*day + 30*time.Second), Outcome: data.OutcomeTimeout, Error: "robots.txt: timeout"},
			{DomainID: 8, StartedAt: t(-4 * day), FinishedAt: t(-4*day + time.Second), RobotsReadAt: t(-4 * day), RobotsStatus: 200,
				Outcome: data.OutcomeOptedOut},
		},
	}
}

// powerIteration is an independent, deliberately plain PageRank (DESIGN.md,
// "Ranks") over n nodes: the check on package rank's scores.
func powerIteration(n int, edges [][2]int) []float64 {
	const d = 0.85
	out := make([]int, n)
	for _, e := range edges {
		out[e[0]]++
	}
	s := make([]float64, n)
	for i := range s {
		s[i] = 1 / float64(n)
	}
	for it := 0; it < 1000; it++ {
		dangling := 0.0
		for i := range s {
			if out[i] == 0 {
				dangling += s[i]
			}
		}
		next := make([]float64, n)
		for i := range next {
			next[i] = (1-d)/float64(n) + d*dangling/float64(n)
		}
		for _, e := range edges {
			next[e[1]] += d * s[e[0]] / float64(out[e[0]])
		}
		l1 := 0.0
		for i := range s {
			l1 += math.Abs(next[i] - s[i])
		}
		s = next
		if l1 < 1e-12 {
			break
		}
	}
	return s
}

func run1(t *testing.T, dir string, src Source, now time.Time) *data.Manifest {
	t.Helper()
	m, err := RunFrom(context.Background(), src, Options{DataDir: dir, Now: now, Tiers: testTiers})
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	return m
}

func mustOpen(t *testing.T, dir, id string) *snapshot.Snapshot {
	t.Helper()
	s, err := snapshot.Open(dir, id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestRebuildSmallGraph(t *testing.T) {
	dir := t.TempDir()
	src := smallGraph()
	m := run1(t, dir, src, asOf)
	s := mustOpen(t, dir, "")
	if s.ID != "2026-12-01T030000Z" || m.ID != s.ID {
		t.Fatalf("id %q / manifest %q", s.ID, m.ID)
	}

	// Scores: the independent power iteration over the followed edges, in
	// dense order a b c d e f g h.
	dense := map[string]int{"a.example": 0, "b.example": 1, "c.example": 2, "d.example": 3, "e.example": 4, "f.example": 5, "g.example": 6, "h.example": 7}
	followed := [][2]int{{0, 1}, {0, 2}, {1, 0}, {1, 2}, {3, 1}, {3, 2}, {3, 6}, {7, 0}, {7, 2}}
	want := powerIteration(8, followed)
	sum := 0.0
	for _, x := range want {
		sum += x
	}
	if math.Abs(sum-1) > 1e-12 {
		t.Fatalf("reference scores sum to %v", sum)
	}

	// By hand: c has four followed in-links and ranks first; a (from b and
	// h) and b (from a and d) follow; g (one in-link from d, which spreads
	// over three) is last. Checked against the reference scores too.
	wantRank := map[string]int64{"c.example": 1, "a.example": 2, "b.example": 3, "g.example": 4}
	for n, r := range wantRank {
		for m, q := range wantRank {
			if r < q && want[dense[n]] < want[dense[m]] {
				t.Fatalf("reference scores disagree with the hand ranking: %s %v < %s %v", n, want[dense[n]], m, want[dense[m]])
			}
		}
	}

	rows, err := s.Domains()
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		r := &rows[i]
		if got, w := r.Score, want[dense[r.Domain]]; math.Abs(got-w) > 1e-8 {
			t.Errorf("%s: score %v, want %v", r.Domain, got, w)
		}
		r.Score = 0 // compared above, with a tolerance
		// The map: every ranked domain placed, no other (positions are
		// checked in layout_test.go).
		if placed := r.MapX != nil && r.MapY != nil; placed != (r.Rank != nil) {
			t.Errorf("%s: rank %v but map (%v, %v)", r.Domain, r.Rank, r.MapX, r.MapY)
		}
		r.MapX, r.MapY = nil, nil
	}

	tm := func(d time.Duration) *time.Time { v := asOf.Add(d); return &v }
	i64 := func(v int64) *int64 { return &v }
	i32 := func(v int32) *int32 { return &v }
	str := func(v string) *string { return &v }
	// Communities: {a, b, c, h} and {d, g}, which link to each other
	// less; e and f, without a followed link, have none.
	wantRows := []data.DomainRow{
		{ID: 0, Domain: "a.example", Rank: i64(2), InDomains: 2, OutDomains: 2, Tier: 2, RevisitDays: 21, PagesPerVisit: 20,
			FirstSeen: asOf.Add(-30 * day), LastVisit: tm(-5 * day), NextVisit: tm(16 * day), LastStatus: i32(200), LastOutcome: str("ok"),
			HTTPS: bp(true), IPv6: bp(false), ASN: i64(64500), NetworkOperator: str("Example Net"), Community: i32(0)},
		{ID: 1, Domain: "b.example", Rank: i64(3), InDomains: 2, OutDomains: 2, Tier: 2, RevisitDays: 21, PagesPerVisit: 20,
			FirstSeen: asOf.Add(-20 * day), LastVisit: tm(-2 * day), NextVisit: tm(19 * day), LastStatus: i32(200), LastOutcome: str("ok"), Community: i32(0)},
		{ID: 2, Domain: "c.example", Rank: i64(1), InDomains: 4, Tier: 1, RevisitDays: 10, PagesPerVisit: 50,
			FirstSeen: asOf.Add(-20 * day), LastVisit: tm(-1 * day), NextVisit: tm(1 * day), LastStatus: i32(0), LastOutcome: str("timeout"), Failures: 2, Community: i32(0)},
		{ID: 3, Domain: "d.example", OutDomains: 3, Tier: 3, RevisitDays: 365, PagesPerVisit: 8,
			FirstSeen: asOf.Add(-10 * day), LastVisit: tm(-3 * day), NextVisit: tm(362 * day), LastStatus: i32(200), LastOutcome: str("partial"), Community: i32(1)},
		// e: known only through a nofollow link: listed, unranked, no next visit.
		{ID: 4, Domain: "e.example", Tier: 3, RevisitDays: 365, PagesPerVisit: 8, FirstSeen: asOf.Add(-3 * day)},
		// f: seeded, never visited: due now with the lowest tier's pages.
		{ID: 5, Domain: "f.example", Tier: 3, RevisitDays: 365, PagesPerVisit: 8, FirstSeen: asOf.Add(-1 * day), NextVisit: tm(0)},
		// g: ranked 4 (tier 3), never visited: due now, 8 pages.
		{ID: 6, Domain: "g.example", Rank: i64(4), InDomains: 1, Tier: 3, RevisitDays: 365, PagesPerVisit: 8, FirstSeen: asOf.Add(-3 * day), NextVisit: tm(0), Community: i32(1)},
		{ID: 8, Domain: "h.example", OutDomains: 2, Tier: 3, RevisitDays: 365, PagesPerVisit: 8, FirstSeen: asOf.Add(-40 * day),
			LastVisit: tm(-4 * day), NextVisit: tm(361 * day), LastStatus: i32(200), LastOutcome: str("opted_out"), OptedOut: true, Community: i32(0)},
	}
	if got, w := asJSON(t, rows), asJSON(t, wantRows); got != w {
		t.Errorf("domains.parquet:\n%s\nwant:\n%s", got, w)
	}

	sched, err := s.Schedule()
	if err != nil {
		t.Fatal(err)
	}
	wantSched := []data.ScheduleRow{
		{Domain: "g.example", NextVisit: asOf, Tier: 3, Pages: 8, Reason: "new", Priority: 1},
		{Domain: "f.example", NextVisit: asOf, Tier: 3, Pages: 8, Reason: "new", Priority: 0},
		{Domain: "c.example", NextVisit: asOf.Add(day), Tier: 1, Pages: 50, Reason: "retry", Priority: 4},
		{Domain: "a.example", NextVisit: asOf.Add(16 * day), Tier: 2, Pages: 20, Reason: "revisit", Priority: 2},
		{Domain: "b.example", NextVisit: asOf.Add(19 * day), Tier: 2, Pages: 20, Reason: "revisit", Priority: 2},
		{Domain: "h.example", NextVisit: asOf.Add(361 * day), Tier: 3, Pages: 8, Reason: "revisit", Priority: 0},
		{Domain: "d.example", NextVisit: asOf.Add(362 * day), Tier: 3, Pages: 8, Reason: "revisit", Priority: 0},
	}
	if got, w := asJSON(t, sched), asJSON(t, wantSched); got != w {
		t.Errorf("schedule.parquet:\n%s\nwant:\n%s", got, w)
	}

	edges, err := s.Edges()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"a.example", "b.example", "c.example", "d.example", "e.example", "f.example", "g.example", "", "h.example"}
	var wantEdges []data.EdgeRow
	for _, e := range src.edges {
		wantEdges = append(wantEdges, data.EdgeRow{Src: names[e.SrcID], Dst: names[e.DstID], SrcID: int32(e.SrcID), DstID: int32(e.DstID),
			FirstSeen: e.FirstSeen, LastSeen: e.LastSeen, Nofollow: e.Nofollow, Sitewide: e.Sitewide})
	}
	if got, w := asJSON(t, edges), asJSON(t, wantEdges); got != w {
		t.Errorf("edges.parquet:\n%s\nwant:\n%s", got, w)
	}

	words, err := s.LinkWords()
	if err != nil {
		t.Fatal(err)
	}
	wantWords := []data.LinkWordRow{{Domain: "c.example", Word: "blue", Sites: 3}, {Domain: "c.example", Word: "river", Sites: 3}}
	if got, w := asJSON(t, words), asJSON(t, wantWords); got != w {
		t.Errorf("link_words.parquet:\n%s\nwant:\n%s", got, w)
	}

	visits, err := s.Visits()
	if err != nil {
		t.Fatal(err)
	}
	wantVisits := []data.VisitRow{
		{Domain: "a.example", StartedAt: asOf.Add(-15 * day), FinishedAt: asOf.Add(-15*day + time.Minute), RobotsReadAt: tm(-15 * day),
			RobotsStatus: i32(404), Outcome: "ok", HTTPStatus: 200, Pages: 8, Bytes: 81920},
		{Domain: "a.example", StartedAt: asOf.Add(-5 * day), FinishedAt: asOf.Add(-5*day + 90*time.Second), RobotsReadAt: tm(-5 * day),
			RobotsStatus: i32(200), Outcome: "ok", HTTPStatus: 200, Pages: 50, Bytes: 512000},
		{Domain: "c.example", StartedAt: asOf.Add(-day), FinishedAt: asOf.Add(-day + 30*time.Second), Outcome: "timeout", Error: str("robots.txt: timeout")},
		{Domain: "h.example", StartedAt: asOf.Add(-4 * day), FinishedAt: asOf.Add(-4*day + time.Second), RobotsReadAt: tm(-4 * day),
			RobotsStatus: i32(200), Outcome: "opted_out"},
	}
	if got, w := asJSON(t, visits), asJSON(t, wantVisits); got != w {
		t.Errorf("visits.parquet:\n%s\nwant:\n%s", got, w)
	}

	// The manifest.
	wantCounts := map[string]int64{data.DomainsFile: 8, data.EdgesFile: 10, data.LinkWordsFile: 2, data.VisitsFile: 4, data.ScheduleFile: 7}
	if got, w := asJSON(t, s.Manifest.Counts), asJSON(t, wantCounts); got != w {
		t.Errorf("manifest counts %s, want %s", got, w)
	}
	ri := s.Manifest.Rank
	if ri.Algorithm != "pagerank" || ri.Damping != 0.85 || ri.Tolerance != 1e-9 || ri.MaxIterations != 100 ||
		ri.Ranked != 4 || ri.Iterations < 2 || ri.Iterations > 100 || ri.Residual >= 1e-9 {
		t.Errorf("manifest rank info %+v", ri)
	}
	if !s.Manifest.AsOf.Equal(asOf) || s.Manifest.SchemaVersion != data.SchemaVersion || s.Manifest.Previous != "" ||
		asJSON(t, s.Manifest.Tiers) != asJSON(t, testTiers) {
		t.Errorf("manifest %+v", s.Manifest)
	}
	var stages []string
	for _, st := range s.Manifest.Stages {
		stages = append(stages, st.Stage)
	}
	if got := strings.Join(stages, " "); got != "export domains edges link_words visits ranks communities layout write commit" {
		t.Errorf("manifest stages %q", got)
	}

	// `current` names the snapshot.
	target, err := snapshot.Local(dir).Current()
	if err != nil || target != s.ID {
		t.Errorf("current → %q, %v; want %q", target, err, s.ID)
	}

	// A second rebuild an hour later of the same store: prev_rank is the
	// first one's rank.
	later := asOf.Add(time.Hour)
	m2 := run1(t, dir, src, later)
	if m2.Previous != s.ID {
		t.Errorf("second manifest's previous = %q, want %q", m2.Previous, s.ID)
	}
	s2 := mustOpen(t, dir, "")
	if s2.ID != "2026-12-01T040000Z" {
		t.Fatalf("current is %s after the second rebuild", s2.ID)
	}
	rows2, err := s2.Domains()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows2 {
		w, ranked := wantRank[r.Domain]
		switch {
		case ranked && (r.PrevRank == nil || *r.PrevRank != w):
			t.Errorf("%s: prev_rank %v, want %d", r.Domain, r.PrevRank, w)
		case !ranked && r.PrevRank != nil:
			t.Errorf("%s: prev_rank %d, want null", r.Domain, *r.PrevRank)
		}
	}
}

func TestRebuildEmptyStore(t *testing.T) {
	dir := t.TempDir()
	m := run1(t, dir, &fakeSource{}, asOf)
	for _, f := range []string{data.DomainsFile, data.EdgesFile, data.LinkWordsFile, data.VisitsFile, data.ScheduleFile} {
		if n, ok := m.Counts[f]; !ok || n != 0 {
			t.Errorf("count of %s = %d, %v", f, n, ok)
		}
	}
	s := mustOpen(t, dir, "")
	for name, read := range map[string]func() (int, error){
		"domains":    func() (int, error) { r, err := s.Domains(); return len(r), err },
		"edges":      func() (int, error) { r, err := s.Edges(); return len(r), err },
		"link_words": func() (int, error) { r, err := s.LinkWords(); return len(r), err },
		"visits":     func() (int, error) { r, err := s.Visits(); return len(r), err },
		"schedule":   func() (int, error) { r, err := s.Schedule(); return len(r), err },
	} {
		if n, err := read(); err != nil || n != 0 {
			t.Errorf("%s: %d rows, %v", name, n, err)
		}
	}
}

// entries lists the snapshot directory, for checking that nothing is
// left behind.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(snapshot.Local(dir).Location("", ""))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestRebuildFailureLeavesCurrent(t *testing.T) {
	for _, stage := range []string{"domains", "edges", "link_words", "visits", "ranks", "communities", "layout", "write", "commit"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			run1(t, dir, smallGraph(), asOf)
			before := entries(t, dir)
			_, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf.Add(time.Hour), failAt: stage})
			if err == nil || !strings.Contains(err.Error(), "injected failure at stage "+stage) {
				t.Fatalf("err = %v", err)
			}
			if after := entries(t, dir); !slices.Equal(before, after) {
				t.Errorf("rebuilds/ was %q, is %q after a failed rebuild", before, after)
			}
			if s := mustOpen(t, dir, ""); s.ID != "2026-12-01T030000Z" {
				t.Errorf("current moved to %s", s.ID)
			}
			// And the next rebuild is not disturbed.
			run1(t, dir, smallGraph(), asOf.Add(2*time.Hour))
		})
	}
}

func TestRebuildBadSource(t *testing.T) {
	tests := map[string]func(*fakeSource){
		"edge to unknown id": func(f *fakeSource) { f.edges = append(f.edges, data.EdgeRecord{SrcID: 8, DstID: 7}) },
		"edges out of order": func(f *fakeSource) { f.edges[0], f.edges[1] = f.edges[1], f.edges[0] },
		"visit of unknown":   func(f *fakeSource) { f.visits = append(f.visits, data.VisitLogEntry{DomainID: 7}) },
		"id beyond count":    func(f *fakeSource) { f.n = 8 },
	}
	for name, spoil := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			src := smallGraph()
			spoil(src)
			if _, err := RunFrom(context.Background(), src, Options{DataDir: dir, Now: asOf}); err == nil {
				t.Fatal("rebuild of a bad source succeeded")
			}
			if got := entries(t, dir); !slices.Equal(got, []string{snapshot.LockName}) {
				t.Errorf("left %q", got)
			}
			if _, err := snapshot.Open(dir, ""); !errors.Is(err, snapshot.ErrNoSnapshot) {
				t.Errorf("snapshot.Open: %v", err)
			}
		})
	}
}

func TestRebuildKeep(t *testing.T) {
	dir := t.TempDir()
	for i := range 4 {
		if _, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf.Add(time.Duration(i) * time.Hour), Keep: 2}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{snapshot.LockName, "2026-12-01T050000Z", "2026-12-01T060000Z", snapshot.CurrentName}
	if got := entries(t, dir); !slices.Equal(got, want) {
		t.Errorf("after 4 rebuilds keeping 2: %q, want %q", got, want)
	}
	// A replay at an earlier time becomes current and is never pruned,
	// though it is the oldest.
	if _, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf.Add(-time.Hour), Keep: 1}); err != nil {
		t.Fatal(err)
	}
	want = []string{snapshot.LockName, "2026-12-01T020000Z", "2026-12-01T060000Z", snapshot.CurrentName}
	if got := entries(t, dir); !slices.Equal(got, want) {
		t.Errorf("after a replay keeping 1: %q, want %q", got, want)
	}
	if s := mustOpen(t, dir, ""); s.ID != "2026-12-01T020000Z" {
		t.Errorf("current is %s", s.ID)
	}
}

// TestRebuildCleansStaleTemp: a rebuild removes what a killed one left (a
// staged snapshot with a half-written file, the runs of its sort).
func TestRebuildCleansStaleTemp(t *testing.T) {
	dir := t.TempDir()
	stale, err := snapshot.Local(dir).Stage("2026-11-30T030000Z")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, data.EdgesFile), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	scratch, err := snapshot.Local(dir).Scratch("sort")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(scratch, "names-1.run"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	run1(t, dir, smallGraph(), asOf)
	want := []string{snapshot.LockName, "2026-12-01T030000Z", snapshot.CurrentName}
	if got := entries(t, dir); !slices.Equal(got, want) {
		t.Errorf("the snapshot directory holds %q, want %q", got, want)
	}
}

func TestRebuildExists(t *testing.T) {
	dir := t.TempDir()
	run1(t, dir, smallGraph(), asOf)
	_, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf})
	if !errors.Is(err, snapshot.ErrExists) || !strings.Contains(err.Error(), "2026-12-01T030000Z") {
		t.Errorf("err = %v", err)
	}
}

func TestRebuildBusy(t *testing.T) {
	dir := t.TempDir()
	release, err := snapshot.Local(dir).Lock()
	if err != nil {
		t.Fatal(err)
	}
	_, err = RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf})
	release()
	if !errors.Is(err, snapshot.ErrBusy) || !strings.Contains(err.Error(), "another rebuild is running") {
		t.Fatalf("err = %v", err)
	}
	run1(t, dir, smallGraph(), asOf) // the lock is free again
}

func TestRebuildOptions(t *testing.T) {
	bad := map[string]Options{
		"no dir":    {Now: asOf},
		"no time":   {DataDir: "x"},
		"bad tiers": {DataDir: "x", Now: asOf, Tiers: schedule.Tiers{{Number: 2}}},
		"keep -1":   {DataDir: "x", Now: asOf, Keep: -1},
		"min -1":    {DataDir: "x", Now: asOf, MinInDomains: -1},
	}
	for name, o := range bad {
		if _, err := RunFrom(context.Background(), &fakeSource{}, o); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestRebuildCancelled(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RunFrom(ctx, smallGraph(), Options{DataDir: dir, Now: asOf}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v", err)
	}
	if _, err := snapshot.Open(dir, ""); !errors.Is(err, snapshot.ErrNoSnapshot) {
		t.Errorf("snapshot.Open: %v", err)
	}
}

func TestRebuildProgress(t *testing.T) {
	var stages []string
	o := Options{DataDir: t.TempDir(), Now: asOf, Progress: func(stage string, rows int64) {
		if len(stages) == 0 || stages[len(stages)-1] != stage {
			stages = append(stages, stage)
		}
	}}
	if _, err := RunFrom(context.Background(), smallGraph(), o); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(stages, " "); got != "export domains edges link_words visits ranks communities layout write commit" {
		t.Errorf("progress saw %q", got)
	}
}

// TestRebuildSameForAnyWorkers: the snapshot's rows do not depend on how
// many PageRank workers ran.
func TestRebuildSameForAnyWorkers(t *testing.T) {
	var first string
	for _, workers := range []int{1, 2, 5} {
		dir := t.TempDir()
		o := Options{DataDir: dir, Now: asOf}
		o.Rank.Workers = workers
		if _, err := RunFrom(context.Background(), smallGraph(), o); err != nil {
			t.Fatal(err)
		}
		rows, err := mustOpen(t, dir, "").Domains()
		if err != nil {
			t.Fatal(err)
		}
		got := asJSON(t, rows)
		if first == "" {
			first = got
		} else if got != first {
			t.Errorf("workers %d: domains.parquet differs from workers 1", workers)
		}
	}
}

// TestRebuildLogsPageRank: the rebuild logs PageRank's iterations (every
// one here: pageRankLogEvery 0), as it runs for half an hour at the web's
// scale.
func TestRebuildLogsPageRank(t *testing.T) {
	defer func(d time.Duration) { pageRankLogEvery = d }(pageRankLogEvery)
	pageRankLogEvery = 0
	var logs bytes.Buffer
	m, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: t.TempDir(), Now: asOf, Tiers: testTiers,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= m.Rank.Iterations; i++ {
		if want := fmt.Sprintf(`msg="pagerank iteration" iteration=%d `, i); !strings.Contains(logs.String(), want) {
			t.Errorf("no line %q in\n%s", want, logs.String())
		}
	}
}
