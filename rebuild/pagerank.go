package rebuild

import (
	"context"

	"github.com/mapthenet/mapthenet/rank"
)

// rankDomains scores n domains by PageRank over the followed edges
// src[i]→dst[i] (dense indices) and ranks those with a followed in-link
// (package rank: ties by name). ranks[i] is 0 for the unranked. It also
// returns the graph and the ranked domains in rank order, which the
// layout works on.
func rankDomains(ctx context.Context, n uint32, src, dst []uint32, names []string, p rank.Params) ([]float64, []int64, rank.Result, *rank.CSR, []uint32, error) {
	g, err := rank.BuildCSR(n, src, dst, p.Workers)
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
