package graph

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// byName is a dump with ids replaced by names, so that stores whose ids
// were handed out in another order compare equal.
type byName struct {
	IDs     uint32                      // ids handed out: as many as domains when none was removed
	Domains map[string]data.DomainState // ID zeroed
	Edges   []string
	Visits  []string
}

func dumpByName(t *testing.T, s *Store) byName {
	t.Helper()
	d := dumpStore(t, s)
	names := map[uint32]string{}
	out := byName{IDs: d.N, Domains: map[string]data.DomainState{}}
	for _, st := range d.Domains {
		names[st.ID] = st.Name
		st.ID = 0
		out.Domains[st.Name] = st
	}
	for _, e := range d.Edges {
		out.Edges = append(out.Edges, fmt.Sprintf("%s>%s nf=%v sw=%v %v %v %v", names[e.SrcID], names[e.DstID],
			e.Nofollow, e.Sitewide, e.FirstSeen.UnixNano(), e.LastSeen.UnixNano(), e.Words))
	}
	for _, v := range d.Visits {
		id := v.DomainID
		v.DomainID = 0
		out.Visits = append(out.Visits, fmt.Sprintf("%s %+v", names[id], v))
	}
	sort.Strings(out.Edges)
	sort.Strings(out.Visits)
	return out
}

// pipelineBatches are batches whose visits never share a source, so the
// order in which concurrent callers land them changes no outcome (all
// start at one time, so first_seen does not depend on it either), while
// their links share targets, old and new, across batches.
func pipelineBatches() [][]*data.VisitResult {
	rng := rand.New(rand.NewPCG(7, 8))
	var batches [][]*data.VisitResult
	src := 0
	for range 40 {
		vs := make([]*data.VisitResult, 20+rng.IntN(20))
		for i := range vs {
			links := make([]data.Link, rng.IntN(8))
			for j := range links {
				links[j] = data.Link{Dst: fmt.Sprintf("s%d.example", rng.IntN(600)), Nofollow: rng.IntN(4) == 0,
					Words: []string{fmt.Sprintf("w%d", rng.IntN(3))}}
			}
			vs[i] = visit(fmt.Sprintf("s%d.example", src), t0, data.OutcomeOK, links...)
			src++
		}
		batches = append(batches, vs)
	}
	return batches
}

// TestPipelinedMatchesSequential: batches recorded by several goroutines
// at once (pipelined, pipeline.go) leave the store as recording them one
// after another does.
func TestPipelinedMatchesSequential(t *testing.T) {
	batches := pipelineBatches()
	seq := openMem(t)
	for _, vs := range batches {
		must(t, seq.RecordVisits(vs))
	}
	want := dumpByName(t, seq)

	par := openMem(t)
	work := make(chan []*data.VisitResult)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for vs := range work {
				if err := par.RecordVisits(vs); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	for _, vs := range batches {
		work <- vs
	}
	close(work)
	wg.Wait()
	if got := dumpByName(t, par); !reflect.DeepEqual(got, want) {
		t.Errorf("pipelined store differs from the sequential one:\n got %d domains, %d edges, %d visits\nwant %d, %d, %d",
			len(got.Domains), len(got.Edges), len(got.Visits), len(want.Domains), len(want.Edges), len(want.Visits))
	}
}

// commitGate holds the first commit until released and lets a second
// batch be prepared over it meanwhile.
type commitGate struct {
	entered, release chan struct{}
	fail             error // the held commit's result
	once             sync.Once
}

func holdFirstCommit(t *testing.T, fail error) *commitGate {
	g := &commitGate{entered: make(chan struct{}), release: make(chan struct{}), fail: fail}
	testCommitHook = func(*batch) error {
		held := false
		g.once.Do(func() { held = true })
		if !held {
			return nil
		}
		close(g.entered)
		<-g.release
		return g.fail
	}
	t.Cleanup(func() { testCommitHook = nil })
	return g
}

// waitPreparing returns once another goroutine holds the writer mutex:
// the second batch, preparing over the held one or waiting for it.
func waitPreparing(s *Store) {
	for s.mu.TryLock() {
		s.mu.Unlock()
		runtime.Gosched()
	}
}

// TestPipelineOverlay: a batch prepared while the one before it commits
// sees that batch's new domains, records and followed marks, exactly as
// if it had waited for it.
func TestPipelineOverlay(t *testing.T) {
	t1 := t0.Add(time.Hour)
	first := []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("x.example", "one"), nofollow("y.example"))}
	second := []*data.VisitResult{
		visit("x.example", t1, data.OutcomeOK, link("a.example")),                           // created by the first
		visit("a.example", t1, data.OutcomeOK, link("x.example", "two"), link("y.example")), // edge to x kept: first_seen t0
	}
	seq := openMem(t)
	must(t, seq.RecordVisits(first))
	must(t, seq.RecordVisits(second))
	want := dumpByName(t, seq)

	s := openMem(t)
	g := holdFirstCommit(t, nil)
	errs := make(chan error, 2)
	go func() { errs <- s.RecordVisits(first) }()
	<-g.entered
	go func() { errs <- s.RecordVisits(second) }()
	waitPreparing(s)
	close(g.release)
	must(t, <-errs)
	must(t, <-errs)
	if got := dumpByName(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	if e := edgesOf(t, s, "a.example")["x.example"]; !e.FirstSeen.Equal(t0) || !e.LastSeen.Equal(t1) {
		t.Errorf("a>x seen %v..%v, want %v..%v", e.FirstSeen, e.LastSeen, t0, t1)
	}
}

// TestPipelineFailedCommit: when the batch ahead fails to commit, the one
// prepared over it is prepared again without it, so the failed batch
// leaves no trace and ids stay dense.
func TestPipelineFailedCommit(t *testing.T) {
	first := []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("x.example"), link("y.example"))}
	second := []*data.VisitResult{visit("b.example", t0, data.OutcomeOK, link("x.example"), link("z.example"))}
	seq := openMem(t)
	must(t, seq.RecordVisits(second))
	want := dumpByName(t, seq)

	s := openMem(t)
	injected := errors.New("injected commit failure")
	g := holdFirstCommit(t, injected)
	errFirst, errSecond := make(chan error, 1), make(chan error, 1)
	go func() { errFirst <- s.RecordVisits(first) }()
	<-g.entered
	go func() { errSecond <- s.RecordVisits(second) }()
	waitPreparing(s)
	close(g.release)
	if err := <-errFirst; !errors.Is(err, injected) {
		t.Errorf("first batch: %v, want the injected failure", err)
	}
	must(t, <-errSecond)
	if got := dumpByName(t, s); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// The store goes on: the failed batch again, now committed.
	must(t, s.RecordVisits(first))
	if d := dumpStore(t, s); d.N != 5 || len(d.Edges) != 4 {
		t.Errorf("after retrying: %d ids, %d edges; want 5, 4", d.N, len(d.Edges))
	}
}

// TestPipelineDrain: the other writers and Close wait for a batch in
// flight.
func TestPipelineDrain(t *testing.T) {
	s := openMem(t)
	g := holdFirstCommit(t, nil)
	done := make(chan error, 1)
	go func() {
		done <- s.RecordVisits([]*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("x.example"))})
	}()
	<-g.entered
	added := make(chan error, 1)
	go func() { added <- s.AddDomains([]string{"x.example", "n.example"}, t0, true) }()
	waitPreparing(s)
	close(g.release)
	must(t, <-done)
	must(t, <-added)
	if d := dumpStore(t, s); d.N != 3 {
		t.Errorf("%d ids, want 3 (x.example once)", d.N)
	}
	if st := stateOf(t, s, "x.example"); !st.Seeded || !st.FollowedIn {
		t.Errorf("x.example: %+v, want seeded and followed", st)
	}
}
