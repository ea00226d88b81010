// Package rebuild turns the link store into a snapshot: one directory
// rebuilds/<id>/ of Parquet files (DESIGN.md, "The snapshot") holding every
// known domain with its rank, tier and next visit, the edges, the link words,
// the visit log and the schedule the next crawl follows, plus manifest.json.
//
// Run takes one consistent view of the store and streams it through these
// stages, each timed in the manifest:
//
//	domains    id → name table, crawl flags (memory: one entry per domain)
//	edges      edges.parquet, followed pairs for the rank graph, in/out counts, link-word tallies
//	link_words link_words.parquet
//	visits     visits.parquet, streamed from the visit log (memory does not grow with it)
//	ranks      PageRank over followed edges (package rank), ranks 1..n, tiers
//	communities community ids (package community): Louvain over the followed graph as undirected,
//	           ids kept from the previous snapshot's community column by majority overlap
//	layout     map_x/map_y (package layout): the best Options.MapTop ranked domains by force
//	           layout over the followed graph taken as undirected, warm-started from the previous
//	           snapshot's positions by name; the other ranked domains beside their placed neighbours
//	write      domains.parquet and schedule.parquet, from a second pass over the domains
//	commit     manifest.json, fsync, rename into place, move `current`, prune old snapshots
//
// Everything is written into rebuilds/.tmp-<id>-*; only a complete snapshot
// is renamed to rebuilds/<id> and only then does the relative symlink
// rebuilds/current move to it (symlink under a temporary name, then rename,
// so that readers always see a whole snapshot). A rebuild that fails leaves
// `current` where it was; its temporary directory is removed, and any left
// by a killed rebuild is removed by the next one. A lock file
// (rebuilds/.lock, flock) keeps two rebuilds from running at once.
//
// Reading snapshots (OpenSnapshot, Snapshot's readers) lives in snapshot.go.
package rebuild
