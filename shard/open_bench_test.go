package shard

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
)

// cpuNow is the process's CPU time so far (user and system).
func cpuNow(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkFleetNodeShards is what a fleet node's store costs it outside
// the crawl (BenchmarkFleetCrawl's start and stop, without the crawl): a
// store of K shards made and opened read-only (crawl --fleet's first run),
// every shard opened for writing (a node taking them all), one visit
// recorded in each, every shard given up (read-only again) and the store
// closed. CPU per phase, in ms, for the whole store.
//
//	go test ./shard -run '^$' -bench FleetNodeShards -benchtime 3x
func BenchmarkFleetNodeShards(b *testing.B) {
	for _, k := range []int{6, 64} {
		b.Run(fmt.Sprintf("shards=%d", k), func(b *testing.B) {
			var create, take, write, give, closing time.Duration
			for i := range b.N {
				dir := filepath.Join(b.TempDir(), fmt.Sprint(i))
				c0 := cpuNow(b)
				s, err := Open(dir, Options{Create: true, Shards: k, ReadOnlyShards: true, Graph: graph.Options{Create: true}})
				if err != nil {
					b.Fatal(err)
				}
				c1 := cpuNow(b)
				for j := range k {
					if err := s.SetWritable(j, true); err != nil {
						b.Fatal(err)
					}
				}
				c2 := cpuNow(b)
				now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
				for j := range k {
					d := domainOfShard(b, s, j)
					if err := s.RecordShard(j, []*data.VisitResult{{Domain: d, StartedAt: now, FinishedAt: now, Outcome: data.OutcomeOK, Pages: 1}}); err != nil {
						b.Fatal(err)
					}
				}
				c3 := cpuNow(b)
				for j := range k {
					if err := s.SetWritable(j, false); err != nil {
						b.Fatal(err)
					}
				}
				c4 := cpuNow(b)
				if err := s.Close(); err != nil {
					b.Fatal(err)
				}
				c5 := cpuNow(b)
				create, take, write, give, closing = create+c1-c0, take+c2-c1, write+c3-c2, give+c4-c3, closing+c5-c4
			}
			n := float64(b.N) * float64(time.Millisecond)
			b.ReportMetric(float64(create)/n, "create-cpu-ms")
			b.ReportMetric(float64(take)/n, "take-cpu-ms")
			b.ReportMetric(float64(write)/n, "write-cpu-ms")
			b.ReportMetric(float64(give)/n, "give-cpu-ms")
			b.ReportMetric(float64(closing)/n, "close-cpu-ms")
		})
	}
}

// domainOfShard is a domain routed to shard j of s.
func domainOfShard(b *testing.B, s *Store, j int) string {
	for n := 0; ; n++ {
		if d := fmt.Sprintf("site%d.example", n); s.ShardOf(d) == j {
			return d
		}
	}
}
