package layout

import (
	"context"
	"flag"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/community"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/rank"
)

// layoutSize adds a graphgen preset (M: 1M domains, 10M edges) to
// BenchmarkLayout: go test ./layout -run '^$' -bench Layout -benchtime 1x -layout-size M
var layoutSize = flag.String("layout-size", "", "also benchmark the layout on this graphgen preset (S, M or L)")

// layoutCommunities: the benchmark's layouts know the communities.
var layoutCommunities = flag.Bool("layout-communities", true, "lay out with the graph's communities (Louvain's)")

// benchInput ranks a graphgen graph and returns what Map needs.
func benchInput(tb testing.TB, cfg graphgen.Config) (MapInput, *graphgen.Generator) {
	gen, err := graphgen.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	var src, dst []uint32
	err = gen.Edges(func(s, d uint32, nofollow bool) error {
		if !nofollow {
			src = append(src, s)
			dst = append(dst, d)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	keys := make([]uint64, cfg.Domains)
	for v := range keys {
		keys[v] = Key(gen.Name(uint32(v)))
	}
	return rankedInput(tb, src, dst, keys), gen
}

// rankedInput ranks the graph src→dst of len(keys) nodes and returns what
// Map needs to lay out its top 200,000.
func rankedInput(tb testing.TB, src, dst []uint32, keys []uint64) MapInput {
	g, err := rank.BuildCSR(uint32(len(keys)), src, dst, 0)
	if err != nil {
		tb.Fatal(err)
	}
	res, err := rank.PageRank(context.Background(), g, rank.Params{})
	if err != nil {
		tb.Fatal(err)
	}
	_, order, err := rank.Ranks(g, res.Scores, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return MapInput{Graph: g, Order: order, Top: 200_000, Key: func(v uint32) uint64 { return keys[v] }}
}

// BenchmarkLayout times Map on a graph of 200,000 domains and 2,000,000
// edges (all laid out), cold and warm (from the cold result, with one new
// edge so that the previous positions are not simply kept), and on the
// preset named by -layout-size (its top 200,000 laid out, the rest placed
// beside them). Each graph's communities are Louvain's (package
// community, as the rebuild finds them); -layout-communities=false lays
// out without them. knn-own is the share of each node's 10 nearest nodes
// on the map that are of its community (1: every community a region of
// its own). It reports peak RSS (VmHWM) as it stands after each run.
//
//	go test ./layout -run '^$' -bench Layout -benchtime 1x [-layout-size M]
func BenchmarkLayout(b *testing.B) {
	sizes := []struct {
		name string
		cfg  graphgen.Config
	}{
		{"200k", graphgen.Config{Domains: 200_000, Edges: 2_000_000, Seed: 1}},
		// Planted communities: the own/other metric says how well they
		// stay apart (mean distance to the own community's centre over
		// that to the nearest other centre; lower is better).
		{"200k-c20", graphgen.Config{Domains: 200_000, Edges: 2_000_000, Seed: 1, Communities: 20}},
	}
	if *layoutSize != "" {
		cfg, err := graphgen.Size(*layoutSize)
		if err != nil {
			b.Fatal(err)
		}
		sizes = append(sizes, struct {
			name string
			cfg  graphgen.Config
		}{strings.ToUpper(*layoutSize), cfg})
	}
	for _, size := range sizes {
		in, gen := benchInput(b, size.cfg)
		found, err := community.Detect(context.Background(), in.Graph.N, in.Graph.In, community.Params{})
		if err != nil {
			b.Fatal(err)
		}
		if *layoutCommunities {
			in.Community = func(v uint32) int32 { return found.Community[v] }
		}
		quality := func(b *testing.B, x, y []float64) {
			if k := size.cfg.Communities; k > 1 {
				own, other, _ := communityDistances(x, y, k, gen.Community)
				b.ReportMetric(own/other, "own/other")
			}
			b.ReportMetric(knnPurity(x, y, found.Community, 10), "knn-own")
		}
		var coldX, coldY []float64
		var coldFP uint64
		b.Run(size.name+"/cold", func(b *testing.B) {
			for b.Loop() {
				start, cpu := time.Now(), cpuTime()
				x, y, st, err := Map(context.Background(), in, Params{})
				if err != nil {
					b.Fatal(err)
				}
				coldX, coldY, coldFP = x, y, st.Fingerprint
				quality(b, x, y)
				b.ReportMetric(time.Since(start).Seconds(), "s/layout")
				b.ReportMetric((cpuTime() - cpu).Seconds(), "cpu-s/layout")
				reportMemory(b)
				b.Logf("%+v", st)
			}
		})
		b.Run(size.name+"/warm", func(b *testing.B) {
			if coldX == nil {
				b.Skip("no cold layout")
			}
			// One changed edge: the fingerprint differs, so the warm start iterates.
			warm := in
			warm.PrevFingerprint = coldFP ^ 1
			warm.Prev = func(v uint32) (float64, float64, bool) {
				return coldX[v], coldY[v], !math.IsNaN(coldX[v])
			}
			for b.Loop() {
				start, cpu := time.Now(), cpuTime()
				x, y, st, err := Map(context.Background(), warm, Params{})
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(time.Since(start).Seconds(), "s/layout")
				b.ReportMetric((cpuTime() - cpu).Seconds(), "cpu-s/layout")
				b.ReportMetric(meanDisplacement(coldX, coldY, x, y)/st.MeanEdgeLength, "moved/edge")
				quality(b, x, y)
				reportMemory(b)
				b.Logf("%+v", st)
			}
		})
	}
}

// cpuTime is the CPU time this process has used (user and system): on a
// shared machine it says what the wall time would be without the others.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportMemory reports the process's peak resident set (VmHWM) and the Go
// heap in use.
func reportMemory(b *testing.B) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MiB")
	if hwm := vmHWM(); hwm > 0 {
		b.ReportMetric(float64(hwm)/(1<<20), "peakRSS-MiB")
	}
}

// vmHWM reads the peak resident set size from /proc/self/status (Linux);
// 0 when unknown.
func vmHWM() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
