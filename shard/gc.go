package shard

import "github.com/mapthenet/mapthenet/internal/gctarget"

// createGCPercent is the collector's target while a store's new shards
// are made, in place of Go's 100. Making a shard opens a Badger store,
// writes its mark and closes it, and the close's flush allocates buffers
// that are garbage at once (a table builder's 4 MiB and its index's 3
// MiB, a memtable's arena), over the few MiB of heap a process that has
// just started holds: at the default target the collector ran about 70
// times while 64 shards were made (BenchmarkFleetNodeShards, GODEBUG=
// gctrace=1: 350 ms of the collector's CPU; about 23 times and 220 ms at
// 400); a crawl node, whose idle processors run the collector's mark
// workers while the shards' files sync, ran 60 collections and 2.8 CPU-s
// of them (gctrace) before it took its first shard, in BenchmarkFleetCrawl
// at 64 shards (1 node).
const createGCPercent = 400

// collectLess holds the collector's target at createGCPercent until the
// returned function is called (gctarget.Hold: the operator's GOGC or
// GOMEMLIMIT wins; calls may overlap, as tests make stores in parallel).
// A variable so that a test can see when it is called.
var collectLess = func() (restore func()) { return gctarget.Hold(createGCPercent) }
