package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/mapthenet/mapthenet/rank"
)

// runRank times rank.RankEdgeFile end to end in a child (wall, CPU, peak
// memory, and its own per-stage timings), one PageRank iteration in
// another child (the mean of the 2nd to 11th: on a graph of 2^20 nodes or
// more those gather float32 shares, see rank.PageRank), and igraph's
// PageRank when it is available.
func runRank(ctx context.Context, e *env) ([]result, error) {
	out := filepath.Join(e.dir, "ranks-"+e.size+".parquet")
	w := strconv.Itoa(e.workers)
	var sum rank.Summary
	m, err := runChild(&sum, "rank", e.edges, out, w)
	if err != nil {
		return nil, err
	}
	rows := []result{
		{"rank", "graph", fmt.Sprintf("%d domains, %d rows, %d followed edges, %d ranked", sum.Domains, sum.Rows, sum.FollowedEdges, sum.Ranked)},
		{"rank", "end to end (wall)", secs(m.wall.Seconds())},
		{"rank", "CPU (user+sys)", secs(m.cpu.Seconds())},
		{"rank", "peak memory (max RSS)", fmt.Sprintf("%.0f MiB", float64(m.maxRSSKiB)/1024)},
	}
	rows = append(rows, stolenRow("rank", m)...)
	var prSeconds float64
	for _, st := range sum.Stages {
		rows = append(rows, result{"rank", "  stage " + st.Stage, secs(st.Seconds)})
		if st.Stage == rank.StagePageRank {
			prSeconds = st.Seconds
		}
	}
	rows = append(rows, result{"rank", "PageRank iterations", fmt.Sprintf("%d (residual %.2g, %d extrapolations)", sum.Iterations, sum.Residual, sum.Extrapolations)})

	var it iterationResult
	if _, err := runChild(&it, "iteration", e.edges, w); err != nil {
		rows = append(rows, result{"rank", "one PageRank iteration", "error: " + err.Error()})
	} else {
		rows = append(rows, result{"rank", "one PageRank iteration (2nd-11th)", fmt.Sprintf("%s (%.0f M edges/s)", secs(it.Seconds), float64(it.Edges)/it.Seconds/1e6)})
	}

	switch {
	case e.noIgraph:
	case e.igraph == "":
		rows = append(rows, result{"rank", "igraph", "python3 with igraph not found (apt-get install python3-igraph)"})
	default:
		ig, err := runIgraph(e)
		if err != nil {
			rows = append(rows, result{"rank", "igraph", "error: " + err.Error()})
			break
		}
		rows = append(rows,
			result{"rank", "igraph PageRank (PRPACK)", secs(ig.PageRankSeconds)},
			result{"rank", "igraph / ours (PageRank stage)", fmt.Sprintf("%.2f", ig.PageRankSeconds/prSeconds)},
			result{"rank", "igraph end to end (load + PRPACK)", fmt.Sprintf("%s, CPU %s, peak %.0f MiB", secs(ig.LoadSeconds+ig.PageRankSeconds), secs(ig.cpu.Seconds()), float64(ig.maxRSSKiB)/1024)},
			result{"rank", "igraph / ours (end to end, wall)", fmt.Sprintf("%.2f", (ig.LoadSeconds+ig.PageRankSeconds)/m.wall.Seconds())},
			result{"rank", "igraph / ours (end to end, CPU)", fmt.Sprintf("%.2f", ig.cpu.Seconds()/m.cpu.Seconds())},
		)
		if diff, err := compareScores(e, out, ig); err != nil {
			rows = append(rows, result{"rank", "scores vs igraph", "error: " + err.Error()})
		} else {
			rows = append(rows, result{"rank", "max |score - igraph's|", fmt.Sprintf("%.2g", diff)})
		}
	}
	return rows, nil
}

func secs(s float64) string {
	if s < 1 {
		return fmt.Sprintf("%.1f ms", s*1000)
	}
	return fmt.Sprintf("%.2f s", s)
}
