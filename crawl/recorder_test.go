package crawl

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// orderStore notes, in one log shared with the recorder's logger, when
// each RecordVisits call returns.
type orderStore struct {
	Store
	mu  *sync.Mutex
	log *bytes.Buffer
}

func (s orderStore) RecordVisits(vs []*data.VisitResult) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, v := range vs {
		s.log.WriteString("committed " + v.Domain + "\n")
	}
	return nil
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// Durable when logged: a visit's "visit recorded" line is written only
// after the store's commit of its batch has returned (the store syncs
// before returning: graph.TestSyncWrites).
func TestRecordedLoggedAfterCommit(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	r := newRecorder(orderStore{mu: &mu, log: &buf}, log)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, d := range []string{"a.example", "b.example", "c.example"} {
		r.add(&data.VisitResult{Domain: d, StartedAt: at, FinishedAt: at, Outcome: data.OutcomeOK})
	}
	if err := r.close(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, d := range []string{"a.example", "b.example", "c.example"} {
		c := strings.Index(out, "committed "+d)
		l := strings.Index(out, "domain="+d)
		if c < 0 || l < 0 || l < c {
			t.Errorf("%s: committed at %d, logged at %d; want the log line after the commit:\n%s", d, c, l, out)
		}
	}
}
