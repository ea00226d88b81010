// Package parallel runs a fixed number of goroutines over a split of work
// and waits for them: the fork-join that rank and its edge file reader
// both use, and Ordered, parts made in parallel and used in order.
package parallel

import (
	"sync"
	"sync/atomic"
)

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

// Ordered computes produce(i) for i in 0..n-1 on up to workers
// goroutines and hands the results to use in order of i, on the caller's
// goroutine, as they become ready: the work on later items overlaps the
// use of earlier ones (a file written in order from parts made in
// parallel). At most ahead results (at least workers) are made and not
// yet used. It returns the first error of produce or use in order of i;
// items not yet begun are then not started.
func Ordered[T any](n, workers, ahead int, produce func(i int) (T, error), use func(i int, v T) error) error {
	workers = max(1, min(workers, n))
	type result struct {
		v   T
		err error
	}
	done := make([]chan result, n)
	for i := range done {
		done[i] = make(chan result, 1) // never blocks its worker
	}
	held := make(chan struct{}, max(ahead, workers))
	stop := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				select {
				case held <- struct{}{}:
				case <-stop:
					return
				}
				// Items are taken in order after a slot: the one use
				// waits for is always taken, or takes the next free slot.
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				v, err := produce(i)
				done[i] <- result{v, err}
			}
		})
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for i := range n {
		r := <-done[i]
		<-held
		if r.err != nil {
			return r.err
		}
		if err := use(i, r.v); err != nil {
			return err
		}
	}
	return nil
}
