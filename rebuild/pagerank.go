package rebuild

import (
	"context"

	"github.com/mapthenet/mapthenet/rank"
)

// rankDomains scores n domains by PageRank over the followed edges
// src[i]→dst[i] (dense indices) and ranks those with a followed in-link
// (package rank: ties by name). ranks[i] is 0 for the unranked.
func rankDomains(ctx context.Context, n uint32, src, dst []uint32, names []string, p rank.Params) ([]float64, []int64, rank.Result, error) {
	g, err := rank.BuildCSR(n, src, dst, p.Workers)
	if err != nil {
		return nil, nil, rank.Result{}, err
	}
	res, err := rank.PageRank(ctx, g, p)
	if err != nil {
		return nil, nil, rank.Result{}, err
	}
	r32, _, err := rank.Ranks(g, res.Scores, names)
	if err != nil {
		return nil, nil, rank.Result{}, err
	}
	ranks := make([]int64, len(r32))
	for i, r := range r32 {
		ranks[i] = int64(r)
	}
	return res.Scores, ranks, res, nil
}
