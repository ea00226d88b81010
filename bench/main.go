// Command bench measures mapthenet's heavy stages on synthetic graphs
// (graphgen's S, M and L sizes) and prints a table:
//
//	go run ./bench -size S|M|L [-stages ingest,rebuild,rank] [-dir DIR] [-workers N] [-maptop N] [-shards K]
//
// ingest fills a fresh store (DIR/store-SIZE, or DIR/store-SIZE-kK of K
// shards) from the generated graph, batched per shard and committed as a
// crawl's recorder does; rebuild runs rebuild.Run on that store
// (ingesting first when it is missing); rank
// runs rank.RankEdgeFile on the edge file.
//
// Edge files are generated once and cached in -dir (default: a temporary
// directory, removed afterwards). Each stage runs in a child process of
// this program so that its peak memory (the child's maximum resident set)
// and CPU time are its own. When python3 with igraph is available, the
// rank stage also times igraph's PageRank (PRPACK) on the same graph and
// compares the scores.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A stage is one measured piece of work. run gets the environment and
// returns the rows of the table it measured.
type stage struct {
	name string
	help string
	run  func(ctx context.Context, env *env) ([]result, error)
}

// stages are the -stages values, in the order they run.
var stages = []stage{
	{"ingest", "fill a fresh store (Badger) with one complete visit per source domain, RecordVisits in batches of 256", runIngest},
	{"rebuild", "a whole rebuild (rebuild.Run) of the store the ingest filled: snapshot, ranks, map, schedule", runRebuild},
	{"rank", "rank.RankEdgeFile end to end from the edge file of names, one PageRank iteration, igraph", runRank},
	{"communities", "community.Detect on the followed graph (best of 3), and igraph's community_multilevel on the same graph", runCommunities},
	{"ids", "rank.RankIDFile (the rebuild's way: streamed from an edge file of ids) end to end, and its top checked against an independent power iteration", runIDs},
}

// env is what every stage gets.
type env struct {
	size     string
	dir      string
	workers  int
	edges    string // the size's edge file of names (made on first use: edgeFile)
	igraph   string // python interpreter with igraph, "" if none
	noIgraph bool
	mapTop   int // rebuild.Options.MapTop
	shards   int // K of the store the ingest fills and the rebuild reads (package shard)
}

// result is one row of the table.
type result struct {
	stage, what string
	value       string
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == childFlag {
		os.Exit(childMain(os.Args[2:]))
	}
	size := flag.String("size", "S", "graph size: S (100k domains, 1M edges), M (1M, 10M), L (10M, 100M) or XL (100M, 1B: stage ids only); SIZE+sinks adds rank sinks (2% of the domains in closed cycles: graphgen's SinkShare)")
	stageList := flag.String("stages", "rank", "comma-separated stages to run: ingest, rebuild, rank")
	dir := flag.String("dir", "", "directory to cache the generated edge files in (default: a temporary directory)")
	workers := flag.Int("workers", 0, "workers for the stages (0: GOMAXPROCS)")
	noIgraph := flag.Bool("no-igraph", false, "skip the igraph comparison")
	mapTop := flag.Int("maptop", 0, "rebuild stage: domains the map layout places by force (0: rebuild's default, negative: no map)")
	cpuProfile := flag.String("cpuprofile", "", "write each measured child's CPU profile to `DIR`/JOB.cpu (for go tool pprof)")
	shards := flag.Int("shards", 1, "ingest and rebuild stages: a store of this many shards (DIR/store-SIZE-kK)")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: go run ./bench -size S|M|L|XL[+sinks] [-stages ingest,rebuild,rank,ids] [-dir DIR] [-workers N] [-maptop N] [-shards K] [-cpuprofile DIR]\n\nstages:\n")
		for _, s := range stages {
			fmt.Fprintf(os.Stderr, "  %-8s %s\n", s.name, s.help)
		}
		fmt.Fprintln(os.Stderr)
		flag.PrintDefaults()
	}
	flag.Parse()
	if *cpuProfile != "" {
		abs, err := filepath.Abs(*cpuProfile)
		if err == nil {
			err = os.MkdirAll(abs, 0o755)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		os.Setenv(profileEnv, abs)
	}
	if err := run(*size, *stageList, *dir, *workers, *noIgraph, *mapTop, *shards); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(size, stageList, dir string, workers int, noIgraph bool, mapTop, shards int) error {
	want := map[string]bool{}
	for _, s := range strings.Split(stageList, ",") {
		s = strings.TrimSpace(s)
		found := false
		for _, st := range stages {
			found = found || st.name == s
		}
		if !found {
			return fmt.Errorf("unknown stage %q (want ingest, rebuild, rank or ids)", s)
		}
		want[s] = true
	}
	if dir == "" {
		d, err := os.MkdirTemp("", "mapthenet-bench")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	size = strings.ToUpper(size)
	if base, _ := strings.CutSuffix(size, "+SINKS"); base == "XL" && (want["ingest"] || want["rebuild"] || want["rank"]) {
		return fmt.Errorf("size XL runs the ids stage only (its edge file of names would not fit the memory budget of rank --edges)")
	}
	if shards < 1 {
		return fmt.Errorf("-shards %d: want 1 or more", shards)
	}
	e := &env{size: size, dir: dir, workers: workers, noIgraph: noIgraph, mapTop: mapTop, shards: shards}
	if want["rank"] || want["ingest"] || want["rebuild"] {
		edges, err := edgeFile(dir, size)
		if err != nil {
			return err
		}
		e.edges = edges
	}
	if !noIgraph {
		e.igraph = findIgraph()
	}
	var rows []result
	ctx := context.Background()
	for _, st := range stages {
		if !want[st.name] {
			continue
		}
		r, err := st.run(ctx, e)
		if err != nil {
			rows = append(rows, result{st.name, "error", err.Error()})
			continue
		}
		rows = append(rows, r...)
	}
	printTable(os.Stdout, size, rows)
	return nil
}
