package parallel

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

// Ordered hands every result to use in order, whatever the workers and
// however far ahead they may run, holds no more than ahead results at
// once, and stops at the first error in order.
func TestOrdered(t *testing.T) {
	for _, c := range []struct{ n, workers, ahead int }{{0, 2, 3}, {1, 4, 1}, {100, 1, 1}, {100, 3, 4}, {1000, 8, 16}} {
		var made, used, maxAhead atomic.Int64
		err := Ordered(c.n, c.workers, c.ahead, func(i int) (int, error) {
			a := made.Add(1) - used.Load()
			for m := maxAhead.Load(); a > m && !maxAhead.CompareAndSwap(m, a); m = maxAhead.Load() {
			}
			return i * i, nil
		}, func(i, v int) error {
			if int64(i) != used.Load() || v != i*i {
				return fmt.Errorf("item %d (%d) where %d was due", i, v, used.Load())
			}
			used.Add(1)
			return nil
		})
		if err != nil || used.Load() != int64(c.n) {
			t.Errorf("%+v: %v, %d used", c, err, used.Load())
		}
		if lim := int64(max(c.ahead, c.workers)) + 1; maxAhead.Load() > lim {
			t.Errorf("%+v: %d made ahead of use, want at most %d", c, maxAhead.Load(), lim)
		}
	}
	bad := errors.New("bad")
	var used int
	err := Ordered(50, 3, 3, func(i int) (int, error) {
		if i == 20 {
			return 0, bad
		}
		return i, nil
	}, func(i, v int) error { used++; return nil })
	if !errors.Is(err, bad) || used != 20 {
		t.Errorf("error at item 20: %v after %d used, want bad after 20", err, used)
	}
}
