package rank

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// benchGraph is graphgen's S graph (100k domains, 1M edges) as id pairs,
// made once.
var benchGraph = sync.OnceValues(func() (pairs [2][]uint32, err error) {
	cfg, _ := graphgen.Size("S")
	g, err := graphgen.New(cfg)
	if err != nil {
		return pairs, err
	}
	err = g.Edges(func(s, d uint32, nofollow bool) error {
		if !nofollow {
			pairs[0] = append(pairs[0], s)
			pairs[1] = append(pairs[1], d)
		}
		return nil
	})
	return pairs, err
})

func benchCSR(b *testing.B) *CSR {
	pairs, err := benchGraph()
	if err != nil {
		b.Fatal(err)
	}
	g, err := BuildCSR(100_000, pairs[0], pairs[1], 0)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkBuildCSR(b *testing.B) {
	pairs, err := benchGraph()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(pairs[0]) * 8))
	for b.Loop() {
		if _, err := BuildCSR(100_000, pairs[0], pairs[1], 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBuildCSRFromRuns is BenchmarkBuildCSR from the sources' runs,
// as rank --edges builds (BuildCSR finds the runs of its sources first).
func BenchmarkBuildCSRFromRuns(b *testing.B) {
	pairs, err := benchGraph()
	if err != nil {
		b.Fatal(err)
	}
	runs := edgefile.RunsOf(pairs[0])
	b.SetBytes(int64(len(pairs[0]) * 8))
	for b.Loop() {
		if _, err := buildCSR(100_000, runs, pairs[1], nil, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPageRankIteration times one iteration (MaxIterations 1) on the
// S graph; b.SetBytes counts edges, so MB/s reads as million edges/s / 1.
func BenchmarkPageRankIteration(b *testing.B) {
	g := benchCSR(b)
	for _, workers := range []int{1, 0} {
		name := "workers=all"
		if workers == 1 {
			name = "workers=1"
		}
		b.Run(name, func(b *testing.B) {
			p := Params{MaxIterations: 1, Workers: workers}
			for b.Loop() {
				if _, err := PageRank(context.Background(), g, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkPageRank(b *testing.B) {
	g := benchCSR(b)
	for b.Loop() {
		if _, err := PageRank(context.Background(), g, DefaultParams); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRankEdgeFile ranks the S edge file end to end (Parquet in,
// Parquet out).
func BenchmarkRankEdgeFile(b *testing.B) {
	dir := b.TempDir()
	cfg, _ := graphgen.Size("S")
	g, err := graphgen.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	in := filepath.Join(dir, "edges.parquet")
	if err := g.WriteEdgesParquet(in); err != nil {
		b.Fatal(err)
	}
	out := filepath.Join(dir, "ranks.parquet")
	b.ResetTimer()
	for b.Loop() {
		if _, err := RankEdgeFile(context.Background(), in, out, DefaultParams, nil); err != nil {
			b.Fatal(err)
		}
	}
}
