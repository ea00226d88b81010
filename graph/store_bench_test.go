package graph

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// BenchmarkRecordVisits measures ingest on an on-disk store: batches of
// visits of ~10 links each, targets mostly already known (one link in 20
// names a new domain), sources revisited so edge sets get replaced.
//
//	go test ./graph -run '^$' -bench RecordVisits -benchtime 400x
//
// (-bench 'RecordVisits/batch=1024' picks the main case alone.)
func BenchmarkRecordVisits(b *testing.B) {
	for _, batch := range []int{256, 1024} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) { benchRecord(b, batch, 1, Options{Create: true}) })
	}
	// Two callers, as the crawl's recorder has: one batch prepares while
	// the other commits (pipeline.go).
	for _, batch := range []int{256, 1024} {
		b.Run(fmt.Sprintf("pipelined/batch=%d", batch), func(b *testing.B) { benchRecord(b, batch, 2, Options{Create: true}) })
	}
	b.Run("nocache/batch=1024", func(b *testing.B) { benchRecord(b, 1024, 1, Options{Create: true, NameCache: -1}) })
	b.Run("noprefetch/batch=1024", func(b *testing.B) {
		defer func(n int) { prefetchWorkers = n }(prefetchWorkers)
		prefetchWorkers = 0
		benchRecord(b, 1024, 1, Options{Create: true})
	})
}

// benchStore is a store of known domains in a steady state: each has been
// linked (so FollowedIn is set) and the tree is compacted. Building it is
// left out of the timing.
func benchStore(b *testing.B, opts Options, names []string, mk func(time.Time, int) []*data.VisitResult) *Store {
	b.Helper()
	s, err := Open(b.TempDir(), opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.AddDomains(names, t0, false); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < len(names)/1024; i++ {
		if err := s.RecordVisits(mk(t0.Add(time.Duration(i)*time.Second), 1024)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.db.Flatten(2); err != nil {
		b.Fatal(err)
	}
	return s
}

// benchRecord records b.N batches from callers goroutines.
func benchRecord(b *testing.B, batchSize, callers int, opts Options) {
	const known = 200_000
	names := make([]string, known)
	for i := range names {
		names[i] = fmt.Sprintf("site%d.example", i)
	}
	words := []string{"news", "weather", "recipes", "garden", "music", "travel", "books", "cats"}
	rng := rand.New(rand.NewPCG(1, 2))
	fresh := 0
	mk := func(at time.Time, batchSize int) []*data.VisitResult {
		vs := make([]*data.VisitResult, batchSize)
		for i := range vs {
			links := make([]data.Link, 10)
			for j := range links {
				var dst string
				if rng.IntN(20) == 0 {
					dst = fmt.Sprintf("new%d.example", fresh)
					fresh++
				} else {
					dst = names[rng.IntN(known)]
				}
				links[j] = data.Link{Dst: dst, Nofollow: rng.IntN(10) == 0, Words: words[rng.IntN(len(words)):][:1]}
			}
			vs[i] = visit(names[rng.IntN(known)], at.Add(time.Duration(i)*time.Millisecond), data.OutcomeOK, links...)
		}
		return vs
	}
	s := benchStore(b, opts, names, mk)
	defer s.Close()
	// Batches are built before the clock starts: only the store is timed.
	batches := make([][]*data.VisitResult, b.N)
	for i := range batches {
		batches[i] = mk(t0.Add(time.Duration(i)*time.Hour), batchSize)
	}
	b.ReportAllocs()
	cpu0 := cpuTime()
	if f := os.Getenv("GRAPH_BENCH_CPUPROFILE"); f != "" {
		// Just the timed part (the store's set-up left out).
		out, err := os.Create(f)
		if err != nil {
			b.Fatal(err)
		}
		defer out.Close()
		if err := pprof.StartCPUProfile(out); err != nil {
			b.Fatal(err)
		}
		defer pprof.StopCPUProfile()
	}
	b.ResetTimer()
	work := make(chan []*data.VisitResult)
	errs := make(chan error, callers)
	for range callers {
		go func() {
			var first error
			for vs := range work {
				if err := s.RecordVisits(vs); err != nil && first == nil {
					first = err
				}
			}
			errs <- first
		}()
	}
	for _, vs := range batches {
		work <- vs
	}
	close(work)
	for range callers {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	edges := float64(b.N * batchSize * 10)
	b.ReportMetric(edges/b.Elapsed().Seconds(), "edges/s")
	// Other work on a shared machine slows the wall clock; CPU time spent by
	// this process (Badger's background work included) is steadier. On an
	// idle machine with 2 cores, wall edges/s lies between 1x and 2x this.
	b.ReportMetric(edges/cpu.Seconds(), "edges/cpu-s")
	b.ReportMetric(float64(b.N*batchSize)/b.Elapsed().Seconds(), "visits/s")
}

// cpuTime is the user and system CPU time of this process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSnapshotEdges measures how fast a rebuild can stream edges.
//
//	go test ./graph -run '^$' -bench SnapshotEdges
func BenchmarkSnapshotEdges(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	const sources = 20_000
	for k := 0; k < sources/1000; k++ {
		vs := make([]*data.VisitResult, 1000)
		for i := range vs {
			links := make([]data.Link, 10)
			for j := range links {
				links[j] = data.Link{Dst: fmt.Sprintf("site%d.example", rng.IntN(sources)), Words: []string{"news"}}
			}
			vs[i] = visit(fmt.Sprintf("site%d.example", k*1000+i), t0, data.OutcomeOK, links...)
		}
		if err := s.RecordVisits(vs); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	var n int
	for i := 0; i < b.N; i++ {
		sn, err := s.Snapshot()
		if err != nil {
			b.Fatal(err)
		}
		if err := sn.Edges(func(*data.EdgeRecord) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		sn.Close()
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "edges/s")
}

// BenchmarkTrimVisits measures one trim pass over a visit log of 100,000
// domains with four visits each, a year apart (three of each to drop the
// first time; later passes only scan).
//
//	go test ./graph -run '^$' -bench TrimVisits -benchtime 1x
func BenchmarkTrimVisits(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Create: true, GC: GCOptions{Interval: -1}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const domains = 100_000
	for round := 0; round < 4; round++ {
		for k := 0; k < domains/1000; k++ {
			vs := make([]*data.VisitResult, 1000)
			for i := range vs {
				vs[i] = visit(fmt.Sprintf("site%d.example", k*1000+i), t0.AddDate(round, 0, 0), data.OutcomeOK)
			}
			if err := s.RecordVisits(vs); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n, err := s.trimVisits(false)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.ReportMetric(float64(n), "dropped")
		}
	}
}

// BenchmarkNameOrder measures a view sorted into name order and walked
// once with every field, as a rebuild's export does: held in memory, and
// through runs on disk (a chunk of 1 MiB: a few dozen runs).
//
//	go test ./graph -run '^$' -bench NameOrder -benchtime 5x
func BenchmarkNameOrder(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Create: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	rng := rand.New(rand.NewPCG(3, 4))
	const sources = 50_000
	for k := 0; k < sources/1000; k++ {
		vs := make([]*data.VisitResult, 1000)
		for i := range vs {
			links := make([]data.Link, 10)
			for j := range links {
				links[j] = data.Link{Dst: fmt.Sprintf("site%d.example", rng.IntN(4*sources)), Words: []string{"news"}}
			}
			vs[i] = visit(fmt.Sprintf("site%d.example", rng.IntN(4*sources)), t0, data.OutcomeOK, links...)
		}
		if err := s.RecordVisits(vs); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		spill func() Spill
	}{
		{"memory", func() Spill { return Spill{} }},
		{"runs", func() Spill { return Spill{Dir: b.TempDir(), ChunkBytes: 1 << 20} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			var n int
			for i := 0; i < b.N; i++ {
				sn, err := s.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				no, err := sn.LoadByName(c.spill())
				sn.Close()
				if err != nil {
					b.Fatal(err)
				}
				if err := no.Each(NamedAll, func(nd *Named) error { n += len(nd.Edges); return nil }); err != nil {
					b.Fatal(err)
				}
				if err := no.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)/float64(b.N), "edges/op")
		})
	}
}
