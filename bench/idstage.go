package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/rank"
	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// checkTop is how many of the best-ranked domains the ids stage checks
// against the independent power iteration.
const checkTop = 1000

// idEdgeFile returns the path of size's edge file of ids in dir (the
// snapshot's edges.parquet's id columns), generating it first when it is
// not there yet (XL: about a billion rows, 3.5 GB, minutes).
func idEdgeFile(dir, size string) (string, error) {
	return cachedEdgeFile(dir, size, "-ids", func(g *graphgen.Generator, path string) error {
		return g.WriteIDEdgesParquet(path, graphgen.IDFileOptions{Workers: runtime.GOMAXPROCS(0)})
	})
}

// runIDs times rank.RankIDFile end to end in a child (wall, CPU, peak
// memory and its per-byte figures, its stages), then checks the top of
// its ranking against an independent power iteration in another child.
func runIDs(ctx context.Context, e *env) ([]result, error) {
	in, err := idEdgeFile(e.dir, e.size)
	if err != nil {
		return nil, err
	}
	out := filepath.Join(e.dir, "ranks-ids-"+e.size+".parquet")
	var sum rank.Summary
	m, err := runChild(&sum, "rankids", in, out, strconv.Itoa(e.workers))
	if err != nil {
		return nil, err
	}
	peak := float64(m.maxRSSKiB) * 1024
	budget := 4.5*float64(sum.FollowedEdges) + 40*float64(sum.Domains)
	rows := []result{
		{"ids", "graph", fmt.Sprintf("%d domains, %d rows, %d followed edges, %d ranked", sum.Domains, sum.Rows, sum.FollowedEdges, sum.Ranked)},
		{"ids", "end to end (wall)", secs(m.wall.Seconds())},
		{"ids", "CPU (user+sys)", secs(m.cpu.Seconds())},
		{"ids", "peak memory (max RSS)", fmt.Sprintf("%.0f MiB: %.2f bytes a followed edge (%.1f a domain); budget 4.5/edge + 40/domain = %.0f MiB",
			peak/(1<<20), peak/float64(max(sum.FollowedEdges, 1)), peak/float64(max(sum.Domains, 1)), budget/(1<<20))},
	}
	rows = append(rows, stolenRow("ids", m)...)
	for _, st := range sum.Stages {
		rows = append(rows, result{"ids", "  stage " + st.Stage, secs(st.Seconds)})
	}
	rows = append(rows, result{"ids", "PageRank iterations", fmt.Sprintf("%d (residual %.2g, %d extrapolations)", sum.Iterations, sum.Residual, sum.Extrapolations)})

	var pc powerResult
	pm, err := runChild(&pc, "powercheck", in, strconv.Itoa(checkTop))
	if err != nil {
		return append(rows, result{"ids", "power iteration check", "error: " + err.Error()}), nil
	}
	same, diff, err := compareTop(out, pc)
	if err != nil {
		return append(rows, result{"ids", "power iteration check", "error: " + err.Error()}), nil
	}
	rows = append(rows,
		result{"ids", "independent power iteration", fmt.Sprintf("%s, %d iterations (push over the file's out-edges, one core), peak %.0f MiB", secs(pm.wall.Seconds()), pc.Iterations, float64(pm.maxRSSKiB)/1024)},
		result{"ids", fmt.Sprintf("top %d vs the power iteration", checkTop), fmt.Sprintf("%d of %d in the same place, max |score diff| %.2g", same, len(pc.Top), diff)},
	)
	return rows, nil
}

func childRankIDs(args []string) (rank.Summary, error) {
	if len(args) != 3 {
		return rank.Summary{}, fmt.Errorf("rankids: want IN OUT WORKERS")
	}
	workers, _ := strconv.Atoi(args[2])
	return rank.RankIDFile(context.Background(), args[0], args[1], rank.Params{Workers: workers}, nil)
}

// powerResult is the independent power iteration's top.
type powerResult struct {
	Iterations int        `json:"iterations"`
	Top        []topScore `json:"top"`
}

type topScore struct {
	ID    uint32  `json:"id"`
	Score float64 `json:"score"`
}

// childPowerCheck computes PageRank as DESIGN.md defines it with a code
// path of its own: push-style power iteration over the out-edges the
// file's order gives (the targets in file order, each source's run
// length), one goroutine, no CSR. It returns the best K.
func childPowerCheck(args []string) (powerResult, error) {
	var res powerResult
	if len(args) != 2 {
		return res, fmt.Errorf("powercheck: want IN K")
	}
	k, _ := strconv.Atoi(args[1])
	f, err := edgefile.OpenIDs(args[0])
	if err != nil {
		return res, err
	}
	n := int(f.MaxID() + 1)
	outdeg := make([]uint32, n)
	targets := make([]uint32, 0, f.Rows())
	err = f.Scan(context.Background(), 1, true, func(_ int, b *edgefile.IDBatch) error {
		for i, s := range b.Src {
			if b.Nofollow != nil && b.Nofollow[i] {
				continue
			}
			outdeg[s]++
			targets = append(targets, b.Dst[i])
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	const d = 0.85
	x, y := make([]float64, n), make([]float64, n)
	for v := range x {
		x[v] = 1 / float64(n)
	}
	for res.Iterations < 100 {
		dangling := 0.0
		for v, od := range outdeg {
			if od == 0 {
				dangling += x[v]
			}
		}
		base := (1-d)/float64(n) + d*dangling/float64(n)
		for v := range y {
			y[v] = base
		}
		pos := 0
		for s, od := range outdeg {
			if od == 0 {
				continue
			}
			c := d * x[s] / float64(od)
			for _, t := range targets[pos : pos+int(od)] {
				y[t] += c
			}
			pos += int(od)
		}
		diff := 0.0
		for v := range x {
			diff += math.Abs(y[v] - x[v])
		}
		x, y = y, x
		res.Iterations++
		if diff < 1e-9 {
			break
		}
	}
	total := 0.0
	for _, s := range x {
		total += s
	}
	ids := make([]uint32, 0, n)
	for v := range n {
		ids = append(ids, uint32(v))
	}
	slices.SortFunc(ids, func(a, b uint32) int {
		if x[a] != x[b] {
			if x[a] > x[b] {
				return -1
			}
			return 1
		}
		return int(a) - int(b)
	})
	for _, v := range ids[:min(k, n)] {
		res.Top = append(res.Top, topScore{v, x[v] / total})
	}
	return res, nil
}

// compareTop compares the rank file's first rows with the power
// iteration's top: how many ids sit in the same place, and the largest
// score difference among them.
func compareTop(ranksPath string, pc powerResult) (same int, maxDiff float64, err error) {
	f, err := os.Open(ranksPath)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	r := parquet.NewGenericReader[data.RankIDRow](f)
	defer r.Close()
	rows := make([]data.RankIDRow, len(pc.Top))
	got, err := r.Read(rows)
	if got < len(rows) {
		return 0, 0, fmt.Errorf("reading %s: %d rows: %v", ranksPath, got, err)
	}
	for i, t := range pc.Top {
		if rows[i].ID == int64(t.ID) {
			same++
		}
		maxDiff = max(maxDiff, math.Abs(rows[i].Score-t.Score))
	}
	return same, maxDiff, nil
}
