package crawl

import (
	"time"

	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/internal/gctarget"
)

// DefaultMemoryLimit is the soft memory limit a crawl runs under when the
// operator set none. A crawl's live heap is mostly fixed: the store's
// record cache (256 MiB), Badger's memtables (64 MiB each), the name
// cache, and the visits in flight (each bounded: MaxLinkDomains, the
// 1024 KB body cap); the queues of domains found or due are bounded too
// (MaxFound, MaxDue). With Go's default GC target such a heap of 500-700
// MB grows to twice that between collections, while a stream of parsed
// pages is garbage at once (BenchmarkCrawlDiscovery peaked at 1.3-1.6 GiB
// RSS so; under this limit, 977 MiB for 2 million domains discovered). A
// soft limit makes the collector work harder only near it.
const DefaultMemoryLimit = 768 << 20

// heapHolder is a store that says how much heap it holds for itself
// (*shard.Store: graph.Store.HeapHeld of each shard).
type heapHolder interface{ HeapHeld() int64 }

// heldNotifier is a heapHolder that says when what it holds may have
// changed (*shard.Store, as a fleet node opens and closes shards).
type heldNotifier interface{ HeldChanged() <-chan struct{} }

// memoryLimit is the soft memory limit a crawl of store runs under:
// DefaultMemoryLimit, which was set for one store of the default options,
// raised by what store's shards hold now beyond the most such a store
// holds (graph.HeapFloor). Without that, a store of many shards (64
// memtable arenas of 21 MiB, and their caches) holds more than the limit
// before the crawl does anything, and the collector runs without pause: a fleet node of 64 shards spent most of its CPU
// in it (BenchmarkFleetCrawl -bench-fleet-shards 64).
func memoryLimit(store any) int64 {
	limit := int64(DefaultMemoryLimit)
	if h, ok := store.(heapHolder); ok {
		limit += max(0, h.HeapHeld()-graph.HeapFloor(graph.Options{}))
	}
	return limit
}

// heapRecheck is how often a crawl's soft memory limit follows what its
// store holds (caches fill; a fleet node opens shards for writing as it
// takes them, which a store that says so, heldNotifier, makes the limit
// follow at once). Every second: a node that takes 64 shards at its start
// holds 1.3 GiB of memtable arenas at once, and until the limit follows,
// the heap is above it and the collector runs without pause (at 10 s, a
// fifth of a 64-shard node's CPU in BenchmarkFleetCrawl went to it). A
// recheck is a sum over the shards and, when it changed, a new limit: no
// stop of the world.
const heapRecheck = time.Second

// boundHeap holds the soft memory limit at memoryLimit of store
// (gctarget.HoldLimit), rechecked every interval of real time (the limit
// tunes the collector and no crawl behaviour waits on it, so it takes no
// part in the crawl's clock), unless GOMEMLIMIT or GOGC is set in the
// environment (the operator's choice wins), and returns what ends the
// hold.
func boundHeap(store any, every time.Duration) (restore func()) {
	if gctarget.OperatorSet() {
		return func() {}
	}
	hold := gctarget.HoldLimit(memoryLimit(store))
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		if _, ok := store.(heapHolder); !ok {
			return
		}
		var changed <-chan struct{} // nil: never
		if n, ok := store.(heldNotifier); ok {
			changed = n.HeldChanged()
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			case <-changed:
			}
			hold.Set(memoryLimit(store))
		}
	}()
	return func() {
		close(stop)
		<-done
		hold.Release()
	}
}
