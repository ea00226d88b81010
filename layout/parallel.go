package layout

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// chunkNodes is the number of nodes in one chunk of parallel work (a
// variable so that tests can cut small graphs into many chunks). Chunks
// are also the unit of summation order, so they depend on the node count
// only, never on the number of workers.
var chunkNodes = 2048

// nchunks is the number of chunks of n nodes.
func nchunks(n int) int { return (n + chunkNodes - 1) / chunkNodes }

// chunk returns chunk c's node range.
func chunk(c, n int) (lo, hi int) { return c * chunkNodes, min((c+1)*chunkNodes, n) }

// forChunks runs fn(c) for every chunk c of n nodes on up to workers
// goroutines and returns when all are done. Chunks are handed out from a
// shared counter so that a slow chunk does not stall the others; fn must
// write only to its own chunk's slots.
func forChunks(n, workers int, fn func(c, lo, hi int)) {
	k := nchunks(n)
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if workers == 1 || k <= 1 {
		for c := range k {
			lo, hi := chunk(c, n)
			fn(c, lo, hi)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, k) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c := int(next.Add(1) - 1)
				if c >= k {
					return
				}
				lo, hi := chunk(c, n)
				fn(c, lo, hi)
			}
		}()
	}
	wg.Wait()
}

// sumInOrder adds xs up from the first: a fixed order, so a fixed result.
func sumInOrder(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s
}
