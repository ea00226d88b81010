// Package parallel runs a fixed number of goroutines over a split of work
// and waits for them: the fork-join that rank and its edge file reader
// both use.
package parallel

import "sync"

// Run runs fn(0..k-1) on k goroutines and waits for them (k == 1: on the
// caller's goroutine).
func Run(k int, fn func(i int)) {
	if k == 1 {
		fn(0)
		return
	}
	var wg sync.WaitGroup
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(i)
		}()
	}
	wg.Wait()
}
