package data

import "time"

// Manifest is manifest.json: what a snapshot holds and how it was made.
type Manifest struct {
	ID            string           `json:"id"`
	AsOf          time.Time        `json:"as_of"`
	SchemaVersion int              `json:"schema_version"`
	Previous      string           `json:"previous,omitempty"`
	Counts        map[string]int64 `json:"counts"`
	Rank          RankInfo         `json:"rank"`
	Tiers         []Tier           `json:"tiers"`
	Stages        []StageTiming    `json:"stages,omitempty"`
	CreatedAt     time.Time        `json:"created_at"`
	// SchedulePartitions lists the schedule's partitions by shard (a
	// fleet rebuild's snapshot; nil otherwise: see partition.go).
	SchedulePartitions *SchedulePartitions `json:"schedule_partitions,omitempty"`
}

// Tier is one row of the revisit tier table, as manifest.json lists it:
// domains ranked at or above MaxRank (and below the previous tier's) are
// revisited every RevisitDays and read up to Pages pages per visit. MaxRank
// 0 means "every rank below, and unranked domains": only the last tier has
// it. The table itself, its default, checks and lookup are the revisit
// policy's (package schedule).
type Tier struct {
	Number      int   `json:"tier" yaml:"tier" toml:"tier"`
	MaxRank     int64 `json:"max_rank" yaml:"max_rank" toml:"max_rank"`
	RevisitDays int   `json:"revisit_days" yaml:"revisit_days" toml:"revisit_days"`
	Pages       int   `json:"pages" yaml:"pages" toml:"pages"`
}

// RankInfo describes the rank computation of a snapshot.
type RankInfo struct {
	Algorithm     string  `json:"algorithm"`
	Damping       float64 `json:"damping"`
	Tolerance     float64 `json:"tolerance"`
	MaxIterations int     `json:"max_iterations"`
	Iterations    int     `json:"iterations"`
	// Extrapolations is how many of the iterations jumped ahead (a graph
	// that converges slowly: DESIGN.md, "Ranks").
	Extrapolations int     `json:"extrapolations"`
	Residual       float64 `json:"residual"`
	Ranked         int64   `json:"ranked"`
}

// StageTiming is one rebuild stage's duration and row count.
type StageTiming struct {
	Stage   string  `json:"stage"`
	Seconds float64 `json:"seconds"`
	Rows    int64   `json:"rows,omitempty"`
}

// SnapshotIDLayout formats a snapshot id from its as-of time (UTC).
const SnapshotIDLayout = "2006-01-02T150405Z"
