// Package edgefile is the Parquet I/O of ranking: it reads an edge file
// (string columns src and dst, and nofollow when present) into interned
// domain ids fast, on every core, and writes the rank file (data.RankRow).
// Package rank computes the ranks in between (RankEdgeFile).
//
// Reading, in order: Read (reader.go) checks the footer with Arrow and
// picks the columns; decoders (decode.go), one a worker, read the pages
// of their row groups with parquet-go; shards (shard.go, intern.go)
// intern the names; the edge assembler (edgebatch.go) lines the columns
// up by row and makes the edges. WriteRanks (writeranks.go) writes the
// rank file. A damaged file gives an error naming it, never a panic.
package edgefile
