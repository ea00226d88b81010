// Package edgefile is the Parquet I/O of ranking: it reads an edge file
// (string columns src and dst, and nofollow when present) into interned
// domain ids fast, on every core, and writes the rank file (data.RankRow).
// Package rank computes the ranks in between (RankEdgeFile).
//
// Reading, in order: Read (reader.go) checks the footer with Arrow and
// picks the columns; readers (decode.go), one a worker, take the column
// chunks in turn, read their pages with parquet-go, intern the names in
// one shared table (intern.go) and write each row's ids at its row number
// in the edge arrays; Read then drops the rows that are no edge.
// WriteRanks (writeranks.go) writes the rank file. A damaged file gives
// an error naming it, never a panic.
package edgefile
