package rank_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/rank"
)

// Rank an edge list: a Parquet file with string columns src and dst (and
// optionally a bool nofollow column), as `mapthenet rank --edges` does.
func ExampleRankEdgeFile() {
	dir, err := os.MkdirTemp("", "rank-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	type edge struct {
		Src      string `parquet:"src"`
		Dst      string `parquet:"dst"`
		Nofollow bool   `parquet:"nofollow"`
	}
	in := filepath.Join(dir, "edges.parquet")
	if err := parquet.WriteFile(in, []edge{
		{"blog.example", "news.example", false},
		{"shop.example", "news.example", false},
		{"news.example", "blog.example", false},
		{"blog.example", "shop.example", false},
		{"shop.example", "ads.example", true}, // nofollow: no rank for ads.example
	}); err != nil {
		log.Fatal(err)
	}

	out := filepath.Join(dir, "ranks.parquet")
	sum, err := rank.RankEdgeFile(context.Background(), in, out, rank.DefaultParams, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d domains, %d ranked, converged: %v\n", sum.Domains, sum.Ranked, sum.Residual < 1e-9)

	rows, err := parquet.ReadFile[data.RankRow](out)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range rows {
		if r.Rank != 0 {
			fmt.Printf("%d %s %.4f\n", r.Rank, r.Domain, r.Score)
		} else {
			fmt.Printf("- %s %.4f\n", r.Domain, r.Score)
		}
	}
	// Output:
	// 4 domains, 3 ranked, converged: true
	// 1 news.example 0.3785
	// 2 blog.example 0.3693
	// 3 shop.example 0.2046
	// - ads.example 0.0476
}
