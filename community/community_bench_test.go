package community

import (
	"context"
	"testing"

	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/rank"
)

// followedCSR is the rebuild's graph of graphgen's preset: its followed
// edges as rank's in-edge CSR.
func followedCSR(tb testing.TB, size string) *rank.CSR {
	cfg, err := graphgen.Size(size)
	if err != nil {
		tb.Fatal(err)
	}
	gen, err := graphgen.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	src := make([]uint32, 0, cfg.Edges)
	dst := make([]uint32, 0, cfg.Edges)
	err = gen.Edges(func(s, d uint32, nofollow bool) error {
		if !nofollow {
			src, dst = append(src, s), append(dst, d)
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	g, err := rank.BuildCSR(uint32(cfg.Domains), src, dst, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return g
}

// BenchmarkDetect finds the communities of graphgen's S and M graphs
// (M: 1M domains, 10M edges, as the rebuild's communities stage does):
//
//	go test -run '^$' -bench Detect -benchtime 3x ./community
func BenchmarkDetect(b *testing.B) {
	for _, size := range []string{"S", "M"} {
		b.Run(size, func(b *testing.B) {
			g := followedCSR(b, size)
			b.ResetTimer()
			var res *Result
			for range b.N {
				var err error
				res, err = Detect(context.Background(), g.N, g.In, Params{})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(len(res.Sizes)), "communities")
			b.ReportMetric(res.Modularity, "modularity")
			b.ReportMetric(float64(res.Levels), "levels")
			b.ReportMetric(float64(res.Sweeps), "sweeps")
		})
	}
}
