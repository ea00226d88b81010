package graph

import (
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// visitStarts lists every visit-log entry's start by domain name.
func visitStarts(t *testing.T, s *Store) map[string][]time.Time {
	t.Helper()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	names := map[uint32]string{}
	must(t, sn.Domains(func(st *data.DomainState) error { names[st.ID] = st.Name; return nil }))
	got := map[string][]time.Time{}
	must(t, sn.Visits(func(v *data.VisitLogEntry) error {
		got[names[v.DomainID]] = append(got[names[v.DomainID]], v.StartedAt.UTC())
		return nil
	}))
	return got
}

func TestTrimVisits(t *testing.T) {
	day := func(n int) time.Time { return t0.Add(time.Duration(n) * 24 * time.Hour).UTC() }
	// One visit a domain, in order; a: visits spread over 200 days; b: a
	// single old visit (kept: it is b's latest); c: visits a day apart.
	visits := map[string][]int{"a.example": {0, 100, 150, 200}, "b.example": {0}, "c.example": {0, 1, 2}}
	cases := []struct {
		name    string
		history time.Duration
		chunk   int // trimChunk; 0: as is
		want    map[string][]int
	}{
		{"default 90 days", 0, 0, map[string][]int{"a.example": {150, 200}, "b.example": {0}, "c.example": {0, 1, 2}}},
		{"one day", 24 * time.Hour, 0, map[string][]int{"a.example": {200}, "b.example": {0}, "c.example": {1, 2}}},
		{"an hour", time.Hour, 0, map[string][]int{"a.example": {200}, "b.example": {0}, "c.example": {2}}},
		{"keep all", -1, 0, visits},
		// A scan and a delete per domain: the scan resumes where it stopped.
		{"chunks of one", 24 * time.Hour, 1, map[string][]int{"a.example": {200}, "b.example": {0}, "c.example": {1, 2}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.chunk > 0 {
				defer func(n int) { trimChunk = n }(trimChunk)
				trimChunk = c.chunk
			}
			dir := t.TempDir()
			opts := Options{Create: true, VisitHistory: c.history, GC: GCOptions{Interval: -1}}
			s, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			for name, days := range visits {
				for _, d := range days {
					must(t, s.RecordVisit(visit(name, day(d), data.OutcomeOK)))
				}
			}
			// Nothing is trimmed while the store is open without a pass...
			if got := visitStarts(t, s); len(got["a.example"]) != 4 {
				t.Fatalf("before Close: a has %d visits, want 4", len(got["a.example"]))
			}
			must(t, s.Close()) // ...Close trims.
			s, err = Open(dir, Options{Create: true, ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			got := visitStarts(t, s)
			for name, days := range c.want {
				var want []time.Time
				for _, d := range days {
					want = append(want, day(d))
				}
				if !equalTimes(got[name], want) {
					t.Errorf("%s: visits %v, want %v", name, got[name], want)
				}
			}
			// The domains' state is untouched by the trim.
			st, ok, err := s.Domain("a.example")
			if err != nil || !ok {
				t.Fatal(ok, err)
			}
			if !st.LastVisit.Equal(day(200)) {
				t.Errorf("a's last visit %v, want %v", st.LastVisit, day(200))
			}
		})
	}
}

// TestTrimVisitsInGCPass: the background pass trims too, taking the
// writer lock, while the store stays open for writes.
func TestTrimVisitsInGCPass(t *testing.T) {
	h := newGCHarness(t)
	s := h.open(t, time.Minute)
	defer s.Close()
	for _, d := range []int{0, 100, 200} {
		must(t, s.RecordVisit(visit("a.example", t0.Add(time.Duration(d)*24*time.Hour), data.OutcomeOK)))
	}
	if p := h.tick(t); p.err != nil {
		t.Fatal(p.err)
	}
	if got := visitStarts(t, s)["a.example"]; len(got) != 1 {
		t.Errorf("after a pass: %d visits of a, want 1 (%v)", len(got), got)
	}
	must(t, s.RecordVisit(visit("a.example", t0.Add(201*24*time.Hour), data.OutcomeOK)))
	if got := visitStarts(t, s)["a.example"]; len(got) != 2 {
		t.Errorf("a visit after the pass: %d visits of a, want 2", len(got))
	}
}

func equalTimes(a, b []time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Equal(b[i]) {
			return false
		}
	}
	return true
}
