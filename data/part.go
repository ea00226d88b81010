package data

import "time"

// A part is one shard's export for a merge rebuild (package rebuild:
// ExportPart writes it, the merge reads K of them): the shard's names in
// name order with their states, its edges, link-word counts and visits,
// each file sorted so that K parts merge in one streaming pass. Rows refer
// to a domain by its row in the part's domains file (its index in name
// order), not by name: the same order, and what the merge maps to global
// ids with one array lookup per row. In an object store a part lives under
// parts/<rebuild id>/shard=NN/ (package objstore).
const (
	PartDomainsFile   = "domains.parquet"
	PartEdgesFile     = "edges.parquet"
	PartLinkWordsFile = "link_words.parquet"
	PartVisitsFile    = "visits.parquet"
	PartManifestFile  = "part.json" // written last: a part without it is incomplete
)

// PartFormat is the version of the part files this code writes and reads.
const PartFormat = 1

// PartDomainRow is one name the shard knows (it owns it, or links to it):
// sorted by Domain, byte order. State is the store's own encoding of the
// domain's state (graph/FORMAT.md, "Domain record"; FollowedIn in its
// flag), so that parts follow the store's format (PartManifest.StoreFormat)
// without a schema of their own.
type PartDomainRow struct {
	Domain string `parquet:"domain"`
	State  []byte `parquet:"state"`
}

// PartEdgeRow is one out-edge of a domain of the shard: Src and Dst are
// rows of the part's domains file; sorted by (Src, Dst). Times are Unix
// nanoseconds, as the store keeps them.
type PartEdgeRow struct {
	Src       int32 `parquet:"src,delta"`
	Dst       int32 `parquet:"dst"`
	FirstSeen int64 `parquet:"first_seen"`
	LastSeen  int64 `parquet:"last_seen"`
	Nofollow  bool  `parquet:"nofollow"`
	Sitewide  bool  `parquet:"sitewide"`
}

// PartLinkWordRow counts the shard's linking domains that used Word in a
// followed link to Domain (a row of the part's domains file): sorted by
// (Domain, Word). Every count is kept, however small: the merge sums them
// over the shards before the snapshot keeps those of 3 or more.
type PartLinkWordRow struct {
	Domain int32  `parquet:"domain,delta"`
	Word   string `parquet:"word,dict"`
	Sites  int64  `parquet:"sites,delta"`
}

// PartVisitRow is one visit-log entry of a domain of the shard, sorted by
// (Domain, StartedAt): Visit is the store's encoding of the entry
// (graph/FORMAT.md, "Visit"), StartedAt Unix nanoseconds.
type PartVisitRow struct {
	Domain    int32  `parquet:"domain,delta"`
	StartedAt int64  `parquet:"started_at"`
	Visit     []byte `parquet:"visit"`
}

// PartManifest is part.json.
type PartManifest struct {
	Format      int              `json:"format"`       // PartFormat
	StoreFormat int              `json:"store_format"` // the store's format version (graph.FormatVersion)
	Shard       int              `json:"shard"`
	Shards      int              `json:"shards"`
	AsOf        time.Time        `json:"as_of"` // when the shard's view was taken
	Counts      map[string]int64 `json:"counts"`
	CreatedAt   time.Time        `json:"created_at"`
	// Platforms are the store's routing platform suffixes (shard.Router):
	// a fleet rebuild splits the schedule by shard with them.
	Platforms []string `json:"platforms,omitempty"`
}
