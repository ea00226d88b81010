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
// indices: S in 0.5 s, M in 9.9 s (BenchmarkDetect, 2 cores). That is
// still over the goal: level 0's local moving reads about 80M adjacency
// entries at M, each a cache miss or two on arrays of a million nodes.
//
// The graph is taken as undirected: a link either way joins two domains,
// and a pair linking both ways weighs twice as much as a one-way link.
// Local moving visits the nodes in a fixed pseudo-random order with fixed
// tie-breaking. On big levels (moveBatched) the workers choose the moves
// of fixed batches of nodes in parallel against the communities as they
// stood before the batch, and the moves are applied in order; small levels
// move one node at a time (move). Either way the result depends on the
// graph only, never on the number of workers.
package community
