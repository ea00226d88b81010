package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mapthenet/mapthenet/community"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/rank"
)

// runCommunities times community.Detect on the size's followed graph in a
// child (the best of three runs, as the rebuild's communities stage
// calls it), and igraph's community_multilevel (Louvain, C) on the same
// graph taken as undirected, when igraph is available: time and
// modularity, and their ratios.
func runCommunities(_ context.Context, e *env) ([]result, error) {
	var res communitiesResult
	m, err := runChild(&res, "communities", e.size, strconv.Itoa(e.workers))
	if err != nil {
		return nil, err
	}
	rows := []result{
		{"communities", "graph", fmt.Sprintf("%d domains, %d followed edges", res.Domains, res.Edges)},
		{"communities", "Detect (best of 3)", fmt.Sprintf("%s, CPU %s", secs(res.Seconds), secs(res.CPUSeconds))},
		{"communities", "modularity", fmt.Sprintf("%.4f (%d communities of 2 or more, %d levels)", res.Modularity, res.Communities, res.Levels)},
		{"communities", "child peak memory (graph + Detect)", fmt.Sprintf("%.0f MiB", float64(m.maxRSSKiB)/1024)},
	}
	rows = append(rows, stolenRow("communities", m)...)
	switch {
	case e.noIgraph:
	case e.igraph == "":
		rows = append(rows, result{"communities", "igraph", "python3 with igraph not found (apt-get install python3-igraph)"})
	default:
		ig, err := runIgraphLouvain(e)
		if err != nil {
			rows = append(rows, result{"communities", "igraph", "error: " + err.Error()})
			break
		}
		rows = append(rows,
			result{"communities", "igraph community_multilevel", fmt.Sprintf("%s, CPU %s (load %s)", secs(ig.Seconds), secs(ig.CPUSeconds), secs(ig.LoadSeconds))},
			result{"communities", "igraph modularity", fmt.Sprintf("%.4f (%d communities of 2 or more)", ig.Modularity, ig.Communities)},
			result{"communities", "igraph / ours (time, CPU)", fmt.Sprintf("%.2f, %.2f", ig.Seconds/res.Seconds, ig.CPUSeconds/res.CPUSeconds)},
			result{"communities", "ours / igraph (modularity)", fmt.Sprintf("%.3f", res.Modularity/ig.Modularity)},
		)
	}
	return rows, nil
}

// communitiesResult is what the communities child reports.
type communitiesResult struct {
	Domains     int     `json:"domains"`
	Edges       int     `json:"edges"`
	Seconds     float64 `json:"seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Modularity  float64 `json:"modularity"`
	Communities int     `json:"communities"`
	Levels      int     `json:"levels"`
}

// childCommunities builds the size's followed in-edge CSR (not timed) and
// times Detect on it, three times.
func childCommunities(args []string) (*communitiesResult, error) {
	if len(args) != 2 {
		return nil, fmt.Errorf("communities: want SIZE WORKERS")
	}
	workers, _ := strconv.Atoi(args[1])
	cfg, err := graphgen.Size(args[0])
	if err != nil {
		return nil, err
	}
	gen, err := graphgen.New(cfg)
	if err != nil {
		return nil, err
	}
	var src, dst []uint32
	err = gen.Edges(func(s, d uint32, nofollow bool) error {
		if !nofollow {
			src, dst = append(src, s), append(dst, d)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	g, err := rank.BuildCSR(uint32(cfg.Domains), src, dst, workers)
	if err != nil {
		return nil, err
	}
	src, dst = nil, nil
	out := &communitiesResult{Domains: int(g.N), Edges: g.NumEdges(), Seconds: -1}
	for range 3 {
		cpu, start := processCPU(), time.Now()
		res, err := community.Detect(context.Background(), g.N, g.In, community.Params{Workers: workers})
		if err != nil {
			return nil, err
		}
		wall, used := time.Since(start).Seconds(), (processCPU() - cpu).Seconds()
		if out.Seconds < 0 || wall < out.Seconds {
			out.Seconds, out.CPUSeconds = wall, used
		}
		out.Modularity, out.Levels, out.Communities = res.Modularity, res.Levels, 0
		for _, s := range res.Sizes {
			if s >= 2 {
				out.Communities++
			}
		}
	}
	return out, nil
}

// igraphLouvainScript reads the followed edges (a text edge list of
// compact ids) as an undirected multigraph, as Detect takes them (a pair
// linking both ways: two edges), and times community_multilevel.
const igraphLouvainScript = `
import sys, time, json, igraph
path, n = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
g = igraph.Graph.Read_Edgelist(path, directed=False)
if g.vcount() < n:
    g.add_vertices(n - g.vcount())
t1 = time.perf_counter()
c0 = time.process_time()
cl = g.community_multilevel()
t2 = time.perf_counter()
c1 = time.process_time()
print(json.dumps({"load_seconds": t1 - t0, "seconds": t2 - t1, "cpu_seconds": c1 - c0,
    "modularity": g.modularity(cl.membership), "communities": sum(1 for s in cl.sizes() if s >= 2)}))
`

type igraphLouvainResult struct {
	LoadSeconds float64 `json:"load_seconds"`
	Seconds     float64 `json:"seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Modularity  float64 `json:"modularity"`
	Communities int     `json:"communities"`
}

func runIgraphLouvain(e *env) (igraphLouvainResult, error) {
	var res igraphLouvainResult
	cfg, err := graphgen.Size(e.size)
	if err != nil {
		return res, err
	}
	g, err := graphgen.New(cfg)
	if err != nil {
		return res, err
	}
	list := filepath.Join(e.dir, fmt.Sprintf("edges-%s-seed%d.txt", e.size, cfg.Seed))
	ids, err := appearing(g)
	if err != nil {
		return res, err
	}
	if _, err := os.Stat(list); err != nil {
		if err := writeIDList(g, ids, list); err != nil {
			return res, err
		}
	}
	cmd := exec.Command(e.igraph, "-c", igraphLouvainScript, list, strconv.Itoa(len(ids)))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return res, fmt.Errorf("igraph: %w", err)
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("igraph: %w (output %q)", err, out)
	}
	return res, nil
}
