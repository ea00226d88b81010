package rebuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

var benchWords = []string{"news", "blog", "home", "shop", "music", "games", "sport", "travel", "food", "science"}

// fillFromGraphgen records one complete visit per source domain of a
// graphgen graph (its out-links, one link word each), in batches.
func fillFromGraphgen(tb testing.TB, s *graph.Store, cfg graphgen.Config, at time.Time) {
	g, err := graphgen.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	var batch []*data.VisitResult
	var cur *data.VisitResult
	flush := func() {
		if err := s.RecordVisits(batch); err != nil {
			tb.Fatal(err)
		}
		batch = batch[:0]
	}
	err = g.Edges(func(src, dst uint32, nofollow bool) error {
		if cur == nil || cur.Domain != g.Name(src) {
			if len(batch) >= 256 {
				flush()
			}
			cur = &data.VisitResult{Domain: g.Name(src), StartedAt: at, FinishedAt: at.Add(time.Minute), RobotsReadAt: at,
				RobotsStatus: 200, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 8, Complete: true}
			batch = append(batch, cur)
		}
		cur.Links = append(cur.Links, data.Link{Dst: g.Name(dst), Nofollow: nofollow, Words: []string{benchWords[dst%uint32(len(benchWords))]}})
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	flush()
}

// BenchmarkRebuild rebuilds a store filled with graphgen's S graph
// (100k domains, 1M edges): go test -run '^$' -bench Rebuild ./rebuild
func BenchmarkRebuild(b *testing.B) {
	for _, size := range []string{"S"} {
		b.Run(size, func(b *testing.B) {
			cfg, err := graphgen.Size(size)
			if err != nil {
				b.Fatal(err)
			}
			s, err := graph.Open(b.TempDir(), graph.Options{Create: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			start := time.Now()
			fillFromGraphgen(b, s, cfg, asOf.Add(-day))
			b.Logf("store filled in %v", time.Since(start))
			dir := b.TempDir()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				m, err := Run(context.Background(), shard.One(s), Options{DataDir: dir, Now: asOf.Add(time.Duration(i) * time.Hour), Keep: 2})
				if err != nil {
					b.Fatal(err)
				}
				if i == 0 {
					var stages string
					for _, st := range m.Stages {
						stages += fmt.Sprintf(" %s=%.2fs", st.Stage, st.Seconds)
					}
					for _, f := range snapshot.ParquetFiles {
						if r, err := snapshot.Local(dir).Open(m.ID, f); err == nil {
							b.Logf("%s: %.1f MB", f, float64(r.Size())/1e6)
							r.Close()
						}
					}
					b.Logf("domains %d edges %d ranked %d iterations %d;%s", m.Counts[data.DomainsFile], m.Counts[data.EdgesFile], m.Rank.Ranked, m.Rank.Iterations, stages)
				}
			}
		})
	}
}

// BenchmarkRebuildStore rebuilds an existing store without the map's
// layout (another concern, measured on its own), to profile the streaming
// stages on a real-size graph. It is skipped unless MAPTHENET_BENCH_STORE
// names a store, such as the one `go run ./bench -stages ingest -size M`
// leaves:
//
//	MAPTHENET_BENCH_STORE=/tmp/benchdata/store-M go test ./rebuild -run '^$' \
//	    -bench RebuildStore -benchtime 1x -cpuprofile cpu.out
func BenchmarkRebuildStore(b *testing.B) {
	path := os.Getenv("MAPTHENET_BENCH_STORE")
	if path == "" {
		b.Skip("MAPTHENET_BENCH_STORE is not set")
	}
	s, err := graph.Open(path, graph.Options{Create: true, ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	dir := b.TempDir()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// The process's CPU time when each stage last reported (its end):
		// beside the wall times, the measure that a busy machine does not
		// distort.
		cpuAt := map[string]time.Duration{}
		progress := func(stage string, _ int64) { cpuAt[stage] = processCPU() }
		cpu0 := processCPU()
		m, err := Run(context.Background(), shard.One(s), Options{DataDir: dir, Now: asOf.Add(time.Duration(i) * time.Hour), Keep: 1, MapTop: -1, Progress: progress})
		if err != nil {
			b.Fatal(err)
		}
		var stages string
		prev := cpu0
		for _, st := range m.Stages {
			stages += fmt.Sprintf(" %s=%.2fs(cpu %.2fs)", st.Stage, st.Seconds, (cpuAt[st.Stage] - prev).Seconds())
			prev = cpuAt[st.Stage]
		}
		b.Logf("domains %d edges %d;%s", m.Counts[data.DomainsFile], m.Counts[data.EdgesFile], stages)
	}
}

// processCPU is the user and system time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkExportPart exports the store at $MAPTHENET_BENCH_STORE (one
// shard, opened read-only) as a part, its view sorted in memory and
// through runs on disk (the default chunk, and 8 MiB), and reports the
// largest live heap seen while it ran (sampled every millisecond; the
// store's own caches included):
//
//	MAPTHENET_BENCH_STORE=/tmp/benchdata/store-M go test ./rebuild -run '^$' \
//	    -bench ExportPart -benchtime 1x -count 2
func BenchmarkExportPart(b *testing.B) {
	path := os.Getenv("MAPTHENET_BENCH_STORE")
	if path == "" {
		b.Skip("MAPTHENET_BENCH_STORE is not set")
	}
	s, err := graph.Open(path, graph.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		name  string
		chunk int // -1: in memory
	}{{"memory", -1}, {"runs", 0}, {"runs-8MiB", 8 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				sp := graph.Spill{Dir: dir, ChunkBytes: c.chunk}
				if c.chunk < 0 {
					sp = graph.Spill{}
				}
				sn, err := s.Snapshot()
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				stop := sampleHeap()
				p, err := ExportPart(context.Background(), sn, filepath.Join(dir, PartDir(0)), PartInfo{Shards: 1, AsOf: asOf}, sp)
				peak := stop()
				sn.Close()
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(p.Manifest.Counts[data.PartEdgesFile]), "edges")
			}
		})
	}
}

// sampleHeap samples the live heap every millisecond until the function
// it returns is called, which returns the largest seen.
func sampleHeap() func() uint64 {
	done := make(chan struct{})
	peak := make(chan uint64)
	go func() {
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var most uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			most = max(most, sample[0].Value.Uint64())
			select {
			case <-done:
				peak <- most
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); return <-peak }
}
