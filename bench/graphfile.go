package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mapthenet/mapthenet/graphgen"
)

// edgeFile returns the path of size's edge file in dir, generating it
// first when it is not there yet (generation of L takes minutes, so the
// file is cached between runs).
func edgeFile(dir, size string) (string, error) {
	return cachedEdgeFile(dir, size, "", func(g *graphgen.Generator, path string) error {
		return g.WriteEdgesParquet(path)
	})
}

// cachedEdgeFile returns the path of size's edge file in dir named with
// suffix, writing it with write first when it is not there yet.
func cachedEdgeFile(dir, size, suffix string, write func(g *graphgen.Generator, path string) error) (string, error) {
	cfg, err := graphgen.Size(size)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("edges-%s-seed%d%s.parquet", size, cfg.Seed, suffix))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	g, err := graphgen.New(cfg)
	if err != nil {
		return "", err
	}
	start := time.Now()
	fmt.Fprintf(os.Stderr, "generating %s (%d domains, %d edges) ...\n", path, cfg.Domains, g.NumEdges())
	if err := write(g, path); err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "generated in %.1fs\n", time.Since(start).Seconds())
	return path, nil
}
