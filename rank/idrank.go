package rank

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// RankFile ranks an edge file of either kind: of names (RankEdgeFile)
// when it has src and dst string columns, of ids (RankIDFile) when it has
// only src_id and dst_id, or when byID says so (a snapshot's
// edges.parquet has both).
func RankFile(ctx context.Context, inPath, outPath string, byID bool, p Params, logger *slog.Logger) (Summary, error) {
	if !byID {
		names, ids, err := edgefile.Columns(inPath)
		if err != nil {
			return Summary{}, err
		}
		byID = ids && !names
	}
	if byID {
		return RankIDFile(ctx, inPath, outPath, p, logger)
	}
	return RankEdgeFile(ctx, inPath, outPath, p, logger)
}

// Stage names of RankIDFile's Summary.Stages besides RankEdgeFile's.
const (
	StageCount = "count" // the first pass over the file: checks and degrees
	StagePlace = "place" // the second: the graph's sources
)

// RankIDFile ranks an edge file of ids, as the snapshot's edges.parquet
// is (src_id, dst_id, nofollow; sorted by (src_id, dst_id), each pair
// once, no self-loop): the domains are ids 0 to the largest id in the
// file. It builds the graph streamed, in two passes over the file
// (ReadIDGraph: no edge list, no names), computes PageRank as
// RankEdgeFile does and writes outPath: data.RankIDRow, ranked ids by
// rank (ties to the lower id), then the unranked by id.
//
// Memory: the graph (4 bytes an edge, 8 a node), 4 bytes a node per
// stretch of the file read at once while building it, then PageRank's
// three vectors (24 bytes a node; a fourth when it extrapolates): 4 bytes
// an edge and 32 a node at the peak (40 extrapolating), plus fixed buffers. The graph's edges are let go before the ranks
// are sorted (up to 56 bytes a node then, with no edge).
func RankIDFile(ctx context.Context, inPath, outPath string, p Params, logger *slog.Logger) (Summary, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p, err := p.withDefaults()
	if err != nil {
		return Summary{}, err
	}
	var sum Summary
	clock := time.Now()
	stage := func(name string, rows int64) {
		now := time.Now()
		sum.Stages = append(sum.Stages, data.StageTiming{Stage: name, Seconds: now.Sub(clock).Seconds(), Rows: rows})
		logger.Info("rank stage done", "stage", name, "seconds", math.Round(1000*now.Sub(clock).Seconds())/1000, "rows", rows)
		clock = now
	}
	passDone := func(pass int, rows int64) {
		if pass == 1 {
			stage(StageCount, rows)
		}
	}
	g, info, err := ReadIDGraph(ctx, inPath, IDGraphOptions{Workers: p.Workers, ProgressEvery: progressEvery,
		Progress: func(pass int, done, total int64) {
			logger.Info("reading edge file", "file", inPath, "pass", pass, "rows", done, "of", total,
				"percent", math.Round(1000*float64(done)/float64(max(total, 1)))/10)
		}, passDone: passDone})
	if err != nil {
		return Summary{}, err
	}
	sum.Domains, sum.Rows, sum.FollowedEdges = int(g.N), info.Rows, g.NumEdges()
	stage(StagePlace, int64(g.NumEdges()))
	runtime.GC() // the build's cursors go before PageRank's vectors come

	if p.Progress == nil {
		p.Progress = LogProgress(logger, progressEvery)
	}
	res, err := PageRank(ctx, g, p)
	if err != nil {
		return Summary{}, err
	}
	sum.Iterations, sum.Residual, sum.Extrapolations = res.Iterations, res.Residual, res.Extrapolations
	stage(StagePageRank, int64(res.Iterations))
	if res.Residual >= p.Tolerance && g.N > 0 {
		logger.Warn("PageRank stopped before converging", "iterations", res.Iterations, "residual", res.Residual, "tolerance", p.Tolerance)
	}
	// The ranks need in-degrees only: let the edges go.
	g.Sources = nil
	runtime.GC()

	order, err := rankOrder(g, res.Scores, nil)
	if err != nil {
		return Summary{}, err
	}
	sum.Ranked = len(order)
	stage(StageRanks, int64(len(order)))
	runtime.GC()

	ranked := edgefile.Ranked{Scores: res.Scores, InDomains: g.InDegree, OutDomains: g.OutDegree, Order: order}
	if err := edgefile.WriteRanks(outPath, ranked, p.Workers); err != nil {
		return Summary{}, err
	}
	stage(StageWrite, int64(g.N))
	logger.Info("ranked edge file", "file", outPath, "domains", sum.Domains, "ranked", sum.Ranked,
		"iterations", sum.Iterations, "extrapolations", sum.Extrapolations, "residual", sum.Residual)
	return sum, nil
}
