package rebuild

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// TestLookup: snapshot.Lookup and Top over a rebuild's snapshot.
func TestLookup(t *testing.T) {
	dir := t.TempDir()
	src := smallGraph()
	// Twelve more visits of a: the timeline keeps the ten newest.
	for i := range 12 {
		src.visits = append(src.visits, data.VisitLogEntry{DomainID: 0, StartedAt: asOf.Add(-time.Duration(100+i) * day), Outcome: data.OutcomeOK})
	}
	run1(t, dir, src, asOf)
	s := mustOpen(t, dir, "")
	reps, err := s.Lookup([]string{"c.example", "a.example", "c.example"})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 3 || reps[0].Domain != "c.example" || reps[2].Domain != "c.example" || reps[1].Domain != "a.example" {
		t.Fatalf("reports %+v", reps)
	}
	c, a := reps[0], reps[1]
	if c.Next == nil || c.Next.Reason != "retry" || len(c.LinkWords) != 2 || len(c.Visits) != 1 || c.Move != nil {
		t.Errorf("c: %+v", c)
	}
	if len(a.Visits) != snapshot.MaxTimelineVisits || !a.Visits[0].StartedAt.Equal(asOf.Add(-5*day)) || !a.Visits[1].StartedAt.Equal(asOf.Add(-15*day)) {
		t.Errorf("a's timeline: %+v", a.Visits)
	}
	if _, err := s.Lookup([]string{"a.example", "nope.example"}); !errors.Is(err, snapshot.ErrUnknownDomain) || !strings.Contains(err.Error(), "nope.example") {
		t.Errorf("unknown: %v", err)
	}
	top, err := s.Top(2)
	if err != nil || len(top) != 2 || top[0].Domain != "c.example" || top[1].Domain != "a.example" {
		t.Errorf("top 2: %+v, %v", top, err)
	}
}
