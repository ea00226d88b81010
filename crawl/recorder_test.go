package crawl

import (
	"bytes"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
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

// shardedStore is a ShardedStore of three shards (by the domain's first
// letter) whose shard 2 is fenced off.
type shardedStore struct {
	Store
	mu      sync.Mutex
	batches map[int][][]string
}

func (s *shardedStore) Shards() int               { return 3 }
func (s *shardedStore) ShardOf(domain string) int { return int(domain[0]-'a') % 3 }
func (s *shardedStore) RecordVisits([]*data.VisitResult) error {
	panic("the recorder of a sharded store records per shard")
}

func (s *shardedStore) RecordShard(i int, vs []*data.VisitResult) error {
	if i == 2 {
		return fmt.Errorf("shard 2: %w: node b holds it now", graph.ErrFenced)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for _, v := range vs {
		names = append(names, v.Domain)
	}
	s.batches[i] = append(s.batches[i], names)
	return nil
}

// A sharded store gets each shard's visits in that shard's batches; a
// fenced shard's visits are not logged as recorded and do not stop the
// crawl (the other shards go on).
func TestRecorderPerShard(t *testing.T) {
	var mu sync.Mutex
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(lockedWriter{&mu, &buf}, nil))
	s := &shardedStore{batches: map[int][][]string{}}
	r := newRecorder(s, log)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var want []string
	for i := range 60 {
		d := fmt.Sprintf("%c%d.example", 'a'+i%6, i)
		r.add(&data.VisitResult{Domain: d, StartedAt: at, FinishedAt: at, Outcome: data.OutcomeOK})
		if s.ShardOf(d) != 2 {
			want = append(want, d)
		}
	}
	if err := r.close(); err != nil {
		t.Fatalf("a fenced shard failed the recorder: %v", err)
	}
	select {
	case <-r.failed:
		t.Error("a fenced shard stopped the crawl")
	default:
	}
	var got []string
	for i, bs := range s.batches {
		for _, b := range bs {
			for _, d := range b {
				if s.ShardOf(d) != i {
					t.Errorf("%s in a batch of shard %d", d, i)
				}
				got = append(got, d)
			}
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("recorded %v, want %v", got, want)
	}
	out := buf.String()
	for i := range 60 {
		d := fmt.Sprintf("%c%d.example", 'a'+i%6, i)
		logged := strings.Contains(out, "domain="+d+" ")
		if logged != (s.ShardOf(d) != 2) {
			t.Errorf("%s (shard %d) logged as recorded: %v", d, s.ShardOf(d), logged)
		}
	}
	if !strings.Contains(out, "the shard is no longer ours") {
		t.Errorf("no log line for the fenced shard:\n%s", out)
	}
}
