package data

import "time"

// Snapshot file names (DESIGN.md, "The snapshot").
const (
	DomainsFile   = "domains.parquet"
	EdgesFile     = "edges.parquet"
	LinkWordsFile = "link_words.parquet"
	VisitsFile    = "visits.parquet"
	ScheduleFile  = "schedule.parquet"
	ManifestFile  = "manifest.json"
)

// SchemaVersion is written to manifest.json; bump it with any change to the
// row types below.
const SchemaVersion = 1

// The row types below are written with parquet-go. Pointers are nullable
// columns; time.Time columns are TIMESTAMP(MICROS, UTC), which DuckDB reads
// as TIMESTAMP WITH TIME ZONE.

// DomainRow is one row of domains.parquet: one known domain.
//
// Its non-nullable integer columns are delta-encoded (by tag): rows go by
// id, which plain values zstd could not shrink at all, and the counts and
// tiers are small. The file of graphgen's M graph is 7% smaller. Nullable
// columns are pointers, which cannot take the delta encoding.
type DomainRow struct {
	ID              int32      `parquet:"id,delta"`
	Domain          string     `parquet:"domain"`
	Rank            *int64     `parquet:"rank,optional"`
	PrevRank        *int64     `parquet:"prev_rank,optional"`
	Score           float64    `parquet:"score"`
	InDomains       int64      `parquet:"in_domains,delta"`
	OutDomains      int64      `parquet:"out_domains,delta"`
	Tier            int32      `parquet:"tier,delta"`
	RevisitDays     int32      `parquet:"revisit_days,delta"`
	PagesPerVisit   int32      `parquet:"pages_per_visit,delta"`
	FirstSeen       time.Time  `parquet:"first_seen,timestamp(microsecond)"`
	LastVisit       *time.Time `parquet:"last_visit,optional,timestamp(microsecond)"`
	NextVisit       *time.Time `parquet:"next_visit,optional,timestamp(microsecond)"`
	LastStatus      *int32     `parquet:"last_status,optional"`
	LastOutcome     *string    `parquet:"last_outcome,optional"`
	HTTPS           *bool      `parquet:"https,optional"`
	IPv6            *bool      `parquet:"ipv6,optional"`
	ASN             *int64     `parquet:"asn,optional"`
	NetworkOperator *string    `parquet:"network_operator,optional"`
	OptedOut        bool       `parquet:"opted_out"`
	Failures        int32      `parquet:"failures,delta"`
	MapX            *float64   `parquet:"map_x,optional"`
	MapY            *float64   `parquet:"map_y,optional"`
	// Community is the domain's community in the followed graph (package
	// community): an id kept from snapshot to snapshot while most of its
	// members stay; null for a domain without a followed link either way.
	// INT32: ids come from a counter that grows by the new communities of
	// each rebuild, far below 2^31 for any crawl.
	Community *int32 `parquet:"community,optional"`
}

// EdgeRow is one row of edges.parquet: src links to dst now.
//
// Encodings (by tag; the rows are sorted by src_id, dst_id): src is
// dictionary-encoded, as a row group holds few sources, each in a long
// run; src_id is delta-encoded, nearly nothing when sorted. dst and dst_id
// stay plain: a row group names most domains as targets, and the dst
// dictionary's lookups cost a third of writing edges.parquet for a file a
// ninth smaller (graphgen's M graph: 93 MB rather than 82.5 MB, 2 CPU-s
// less). Timestamps stay plain too: zstd finds their repeats better than
// delta encoding does.
type EdgeRow struct {
	Src       string    `parquet:"src,dict"`
	Dst       string    `parquet:"dst"`
	SrcID     int32     `parquet:"src_id,delta"`
	DstID     int32     `parquet:"dst_id"`
	FirstSeen time.Time `parquet:"first_seen,timestamp(microsecond)"`
	LastSeen  time.Time `parquet:"last_seen,timestamp(microsecond)"`
	Nofollow  bool      `parquet:"nofollow"`
	Sitewide  bool      `parquet:"sitewide"`
}

// LinkWordRow is one row of link_words.parquet.
type LinkWordRow struct {
	Domain string `parquet:"domain"`
	Word   string `parquet:"word"`
	Sites  int64  `parquet:"sites"`
}

// VisitRow is one row of visits.parquet.
type VisitRow struct {
	Domain       string     `parquet:"domain"`
	StartedAt    time.Time  `parquet:"started_at,timestamp(microsecond)"`
	FinishedAt   time.Time  `parquet:"finished_at,timestamp(microsecond)"`
	RobotsReadAt *time.Time `parquet:"robots_read_at,optional,timestamp(microsecond)"`
	RobotsStatus *int32     `parquet:"robots_status,optional"`
	Outcome      string     `parquet:"outcome"`
	HTTPStatus   int32      `parquet:"http_status"`
	Pages        int32      `parquet:"pages"`
	Bytes        int64      `parquet:"bytes"`
	Error        *string    `parquet:"error,optional"`
}

// Schedule reasons.
const (
	ReasonNew     = "new"
	ReasonRevisit = "revisit"
	ReasonRetry   = "retry"
)

// ScheduleRow is one row of schedule.parquet: when a domain is next due.
// Priority orders due domains: higher goes first.
type ScheduleRow struct {
	Domain    string    `parquet:"domain"`
	NextVisit time.Time `parquet:"next_visit,timestamp(microsecond)"`
	Tier      int32     `parquet:"tier"`
	Pages     int32     `parquet:"pages"`
	Reason    string    `parquet:"reason"`
	Priority  int64     `parquet:"priority"`
}

// RankRow is one row of the file `rank --edges IN --out OUT` writes.
//
// Rank is 0 for an unranked domain and stored as null (an optional
// column of a plain int64 writes its zero as null): a pointer, as in
// DomainRow, cannot take the delta encoding. The integer columns are
// delta-encoded, which made encoding 1M rows a third cheaper than plain
// values under zstd. (Scores stay plain: Arrow v17 reads a
// byte-stream-split DOUBLE column as empty.)
type RankRow struct {
	Domain     string  `parquet:"domain"`
	Rank       int64   `parquet:"rank,optional,delta"`
	Score      float64 `parquet:"score"`
	InDomains  int64   `parquet:"in_domains,delta"`
	OutDomains int64   `parquet:"out_domains,delta"`
}

// RankIDRow is one row of the file `rank --edges IN --out OUT` writes for
// an edge file of ids (src_id, dst_id, no names): RankRow with the id in
// place of the domain.
type RankIDRow struct {
	ID         int64   `parquet:"id,delta"`
	Rank       int64   `parquet:"rank,optional,delta"`
	Score      float64 `parquet:"score"`
	InDomains  int64   `parquet:"in_domains,delta"`
	OutDomains int64   `parquet:"out_domains,delta"`
}
