package edgefile

import (
	"sync"

	"github.com/mapthenet/mapthenet/internal/hugepage"
)

// makeLarge is make([]T, n, c) backed by huge pages (see package hugepage).
func makeLarge[T any](n, c int) []T { return hugepage.Make[T](n, c) }

// parallel runs fn(0..k-1) on k goroutines and waits for them (rank has
// the same helper; ten lines are not worth a package).
func parallel(k int, fn func(i int)) {
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
