// Package rebuild is the pipeline that turns the link store into a
// snapshot (package snapshot, which owns its files; DESIGN.md, "The
// snapshot"): every known domain with its rank, tier and next visit, the
// edges, the link words, the visit log and the schedule the next crawl
// follows, plus manifest.json.
//
// Run takes a view of every shard of the store (package shard) and
// streams it through these stages, each timed in the manifest:
//
//	export     each shard's view sorted into name order (as many at once as there
//	           are cores; graph.NameOrder: in memory while it fits its chunk, a
//	           K-th of graph.DefaultSpillChunk, else by an external merge sort through
//	           run files in rebuilds/.tmp-sort-*), and the shards' names merged
//	           into the id table (Merge: a domain's id is its position in name
//	           order, so any K gives the same snapshot). Each later pass walks
//	           every shard in a goroutine of its own and merges the rows a part
//	           holds (its names with their states, edges, link-word counts,
//	           visits) as they come, with no part files between; a fleet's
//	           nodes write parts (ExportPart) and RunParts merges those the
//	           same way
//	domains    id → name table, crawl flags (memory: one entry per domain)
//	edges      edges.parquet, followed pairs for the rank graph, in/out counts
//	link_words link_words.parquet, the top words of each domain from the parts' summed counts
//	visits     visits.parquet, streamed from the visit log (memory does not grow with it)
//	ranks      PageRank over followed edges (package rank), ranks 1..n, tiers
//	communities community ids (package community): Louvain over the followed graph as undirected,
//	           ids kept from the previous snapshot's community column by majority overlap
//	layout     map_x/map_y (package layout): the best Options.MapTop ranked domains by force
//	           layout over the followed graph taken as undirected, warm-started from the previous
//	           snapshot's positions by name; the other ranked domains beside their placed neighbours
//	write      domains.parquet and schedule.parquet, from a second pass over the domains
//	commit     manifest.json, publish, move `current` (unless the shrink guard holds it), prune
//
// Everything is written through a snapshot.Build: staged, then published
// whole, and only then does `current` move to it, so that readers always
// see a whole snapshot. A rebuild that fails leaves `current` where it
// was and its staged files are dropped; what a killed rebuild left is
// removed by the next one. The snapshot directory's lock
// (snapshot.Dir.Lock) keeps two rebuilds from running at once.
package rebuild
