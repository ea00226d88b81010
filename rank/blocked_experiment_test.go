package rank

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// TestBlockedIterationExperiment times a source-blocked PageRank
// iteration against the plain one on a graph loaded from the edge file
// named by MAPTHENET_BLOCKED_EDGES (an experiment, issue 16: run by hand).
func TestBlockedIterationExperiment(t *testing.T) {
	path := os.Getenv("MAPTHENET_BLOCKED_EDGES")
	var err error
	if path == "" {
		t.Skip("an experiment: set MAPTHENET_BLOCKED_EDGES to an edge file to run it")
	}
	var g *CSR
	if _, ids, _ := edgefile.Columns(path); ids {
		g, _, err = ReadIDGraph(context.Background(), path, IDGraphOptions{})
	} else {
		var eg *EdgeGraph
		eg, err = LoadEdgeFile(context.Background(), path, 0)
		if eg != nil {
			g = eg.Graph
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	n := int(g.N)
	bounds := g.chunks()
	x, contrib, next, acc := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	cur := make([]uint32, n)
	for v := range n {
		x[v] = 1 / float64(n)
		if g.OutDegree[v] > 0 {
			contrib[v] = x[v] / float64(g.OutDegree[v])
		}
	}
	plain := func() {
		forChunks(len(bounds)-1, 2, func(c int) {
			_ = c
		})
	}
	_ = plain
	plainIter := func() time.Duration {
		xs := slices.Clone(x)
		start := time.Now()
		forChunks(len(bounds)-1, 2, func(c int) {
			iterateChunk(g, bounds[c], bounds[c+1], 0.1, 0.85, xs, contrib, next, make([]float64, 2*chunkCost), step{})
		})
		return time.Since(start)
	}
	blocked := func(seg uint32) time.Duration {
		clear(cur)
		start := time.Now()
		for lo := uint32(0); lo < g.N; lo += seg {
			hi := min(lo+seg, g.N)
			first := lo == 0
			forChunks(len(bounds)-1, 2, func(c int) {
				from := g.offsets.start(bounds[c])
				for v := bounds[c]; v < bounds[c+1]; v++ {
					to := g.offsets.start(v + 1)
					in := g.Sources[from+uint64(cur[v]) : to]
					from = to
					k, _ := slices.BinarySearch(in, hi)
					in = in[:k]
					var s0, s1, s2, s3 float64
					for len(in) >= 4 {
						s0 += contrib[in[0]]
						s1 += contrib[in[1]]
						s2 += contrib[in[2]]
						s3 += contrib[in[3]]
						in = in[4:]
					}
					for _, u := range in {
						s0 += contrib[u]
					}
					if first {
						acc[v] = (s0 + s1) + (s2 + s3)
					} else {
						acc[v] += (s0 + s1) + (s2 + s3)
					}
					cur[v] += uint32(k)
				}
			})
		}
		return time.Since(start)
	}
	best := map[string]time.Duration{}
	keep := func(name string, d time.Duration) {
		if b, ok := best[name]; !ok || d < b {
			best[name] = d
		}
	}
	for range 5 {
		keep("plain", plainIter())
		for _, seg := range []uint32{1 << 18, 1 << 20, 1 << 21, 1 << 22} {
			keep("blocked "+time.Duration(seg).String(), blocked(seg))
		}
	}
	for name, d := range best {
		t.Logf("%-20s %v (%.0f M edges/s)", name, d, float64(g.NumEdges())/d.Seconds()/1e6)
	}
}
