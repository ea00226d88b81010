package shard

import (
	"os"
	"runtime/debug"
	"sync"
)

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

// collectLess sets the collector's target to createGCPercent until the
// returned function is called, unless GOGC or GOMEMLIMIT is set in the
// environment (the operator's choice wins). Calls may overlap (tests make
// stores in parallel): the target is restored when the last one ends.
// It applies to the whole process while a store is made.
var collectLess = func() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	lessGC.mu.Lock()
	defer lessGC.mu.Unlock()
	if lessGC.n == 0 {
		lessGC.prev = debug.SetGCPercent(createGCPercent)
	}
	lessGC.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			lessGC.mu.Lock()
			defer lessGC.mu.Unlock()
			if lessGC.n--; lessGC.n == 0 {
				debug.SetGCPercent(lessGC.prev)
			}
		})
	}
}

var lessGC struct {
	mu   sync.Mutex
	n    int // collectLess calls not yet restored
	prev int // the target before the first of them
}
