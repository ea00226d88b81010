package rebuild

import (
	"context"
	"time"

	"github.com/mapthenet/mapthenet/rank"
)

// pageRankLogEvery is how often the rebuild logs PageRank's progress
// (rank.LogProgress): at the web's scale it runs for half an hour.
var pageRankLogEvery = 10 * time.Second

// rankDomains scores n domains by PageRank over the followed edges of
// the edges.parquet the rebuild wrote (edgesPath), read streamed by id
// (rank.ReadIDGraph: no edge list in memory); dense maps its store ids to
// domain indices (nil: they are the same). It ranks those with a followed
// in-link (package rank: ties by name). ranks[i] is 0 for the unranked.
// It also returns the graph and the ranked domains in rank order, which
// the layout works on.
func rankDomains(ctx context.Context, edgesPath string, n uint32, dense []int32, names []string, p rank.Params) ([]float64, []int64, rank.Result, *rank.CSR, []uint32, error) {
	g, _, err := rank.ReadIDGraph(ctx, edgesPath, rank.IDGraphOptions{Nodes: n, Dense: dense, Workers: p.Workers})
	if err != nil {
		return nil, nil, rank.Result{}, nil, nil, err
	}
	res, err := rank.PageRank(ctx, g, p)
	if err != nil {
		return nil, nil, rank.Result{}, nil, nil, err
	}
	r32, order, err := rank.Ranks(g, res.Scores, names)
	if err != nil {
		return nil, nil, rank.Result{}, nil, nil, err
	}
	ranks := make([]int64, len(r32))
	for i, r := range r32 {
		ranks[i] = int64(r)
	}
	return res.Scores, ranks, res, g, order, nil
}
