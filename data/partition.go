package data

import "fmt"

// A fleet rebuild's snapshot also holds the schedule split by shard, so
// that each crawl node reads only the rows of the shards it holds
// (DESIGN.md, "The snapshot"): schedule/shard=NN.parquet, one per shard
// of the fleet, each the rows of schedule.parquet whose domain lives in
// that shard, in schedule.parquet's order and with its columns. The
// layout is DuckDB's Hive partitioning
// (read_parquet('schedule/*.parquet', hive_partitioning = true) adds a
// shard column). A snapshot of one machine has no partitions.

// SchedulePartitionsDir is the directory of the partitions in a snapshot.
const SchedulePartitionsDir = "schedule"

// SchedulePartitionFile is shard's partition, as a snapshot file name:
// schedule/shard=NN.parquet (at least two digits).
func SchedulePartitionFile(shard int) string {
	return fmt.Sprintf("%s/shard=%02d.parquet", SchedulePartitionsDir, shard)
}

// SchedulePartitions is the manifest's list of a snapshot's schedule
// partitions.
type SchedulePartitions struct {
	// Shards is K: there is one partition per shard, 0 to K-1.
	Shards int `json:"shards"`
	// Platforms are the routing's platform suffixes (the store's: a
	// platform's sites share a shard); the shard of a domain is the
	// package shard's hash of its pace key.
	Platforms []string            `json:"platforms,omitempty"`
	Files     []SchedulePartition `json:"files"`
}

// SchedulePartition is one partition: its file, rows and SHA-256 (hex),
// which a node checks what it downloads against.
type SchedulePartition struct {
	Shard  int    `json:"shard"`
	File   string `json:"file"`
	Rows   int64  `json:"rows"`
	SHA256 string `json:"sha256"`
}
