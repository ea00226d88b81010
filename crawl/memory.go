package crawl

import (
	"math"
	"os"
	"runtime/debug"
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

// boundHeap sets DefaultMemoryLimit unless GOMEMLIMIT or GOGC is set in
// the environment or a limit is set already (the operator's choice wins),
// and returns what restores the previous one.
func boundHeap() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(DefaultMemoryLimit)
	return func() { debug.SetMemoryLimit(prev) }
}
