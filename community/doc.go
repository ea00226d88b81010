// Package community finds the communities of the domain graph by Louvain
// modularity optimisation (Blondel et al. 2008) and keeps their ids stable
// from one rebuild to the next.
//
// It is hand-written rather than gonum's graph/community: on graphgen's S
// graph (100k domains, 1M followed edges; a tenth of the rebuild's M size)
// gonum v0.17.0's community.Modularize had not finished after 43 minutes
// (24 CPU-minutes; its map-based simple.WeightedUndirectedGraph took 4 s
// to build), on the 2-core machine shared with other work, against a goal
// of 3 s at M. It pays for graph node objects, maps and interface calls
// per edge; this package works on the rank's CSR arrays with dense
// indices, 32-bit weights and a small hash table per node.
//
// The graph is taken as undirected: a link either way joins two domains,
// and a pair linking both ways weighs twice as much as a one-way link.
// Its nodes are renumbered by degree, highest first. Local moving (see
// move.go) sweeps them in that order, revisiting only nodes whose
// neighbours moved, with fixed tie-breaking; with Params.MoveWorkers
// above 1, big levels are swept in batches whose costly part (reading
// every neighbour's community) the workers share, with the result of a
// sequential sweep. Optionally
// (Params.RefineSweeps), after the last aggregation the levels are
// refined from the top down: each starts from the communities found above
// it and its nodes move again. The result depends on the graph only,
// never on the number of workers.
//
// Time, graphgen's M graph (1M domains, 10M followed edges), on two cores
// shared with other work: see BenchmarkDetect and `go run ./bench -size M
// -stages communities`, which also runs igraph's community_multilevel on
// the same graph.
package community
