// Package gctarget is the one way a stage of mapthenet sets the Go
// collector's target (GOGC's percent) for the whole process while it
// runs: a rebuild (50), the making of a sharded store's shards (400) and
// ranking an edge file (400) each do.
package gctarget

import (
	"os"
	"runtime/debug"
	"sync"
)

// OperatorSet reports whether GOGC or GOMEMLIMIT is set in the
// environment: then the operator's choice wins and no stage changes the
// collector's settings.
func OperatorSet() bool {
	return os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != ""
}

// Hold sets the collector's target to percent until the returned
// function is called (a second call does nothing), unless OperatorSet.
// Holds may overlap (tests run stages in parallel; a crawl may run a
// rebuild): each sets its percent, and the target from before the first
// comes back when the last ends, whatever order they end in.
func Hold(percent int) (release func()) {
	if OperatorSet() {
		return func() {}
	}
	held.mu.Lock()
	defer held.mu.Unlock()
	prev := debug.SetGCPercent(percent)
	if held.n == 0 {
		held.prev = prev
	}
	held.n++
	var once sync.Once
	return func() {
		once.Do(func() {
			held.mu.Lock()
			defer held.mu.Unlock()
			if held.n--; held.n == 0 {
				debug.SetGCPercent(held.prev)
			}
		})
	}
}

var held struct {
	mu   sync.Mutex
	n    int // holds not yet released
	prev int // the target before the first of them
}
