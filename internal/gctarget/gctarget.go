// Package gctarget is the one way a stage of mapthenet sets the Go
// collector's settings for the whole process while it runs: its target
// (GOGC's percent: a rebuild holds 50, the making of a sharded store's
// shards and ranking an edge file 400) and its soft memory limit
// (GOMEMLIMIT's: a crawl holds one that follows its store, ranking one
// from the edge file's size).
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

// Percent is the collector's target now (Go has no read-only call for it:
// this sets it and puts it back at once).
func Percent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
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

// A Limit is one stage's hold on the process's soft memory limit
// (debug.SetMemoryLimit). Holds may overlap (a crawl may run a rebuild
// that ranks; tests run stages in parallel): the process then runs under
// the least of them and of the limit from before the first, which comes
// back when the last ends, whatever order they end in. Before, each
// stage set the limit itself and restored what it had found: a rank that
// ended after the crawl around it left the crawl's limit set for good,
// and the crawl's recheck overwrote the rank's bound while it ran.
type Limit struct {
	inert bool // made while OperatorSet: does nothing
}

// HoldLimit holds the soft memory limit at bytes (or less, see Limit)
// until Release, unless OperatorSet: then the returned hold does nothing.
func HoldLimit(bytes int64) *Limit {
	if OperatorSet() {
		return &Limit{inert: true}
	}
	l := &Limit{}
	limits.mu.Lock()
	defer limits.mu.Unlock()
	if len(limits.holds) == 0 {
		limits.prev = debug.SetMemoryLimit(-1)
		limits.holds = map[*Limit]int64{}
	}
	limits.holds[l] = bytes
	limits.apply()
	return l
}

// Set changes what l holds the limit at (nothing once released).
func (l *Limit) Set(bytes int64) {
	if l.inert {
		return
	}
	limits.mu.Lock()
	defer limits.mu.Unlock()
	if _, ok := limits.holds[l]; ok && limits.holds[l] != bytes {
		limits.holds[l] = bytes
		limits.apply()
	}
}

// Release ends the hold (a second call does nothing).
func (l *Limit) Release() {
	if l.inert {
		return
	}
	limits.mu.Lock()
	defer limits.mu.Unlock()
	if _, ok := limits.holds[l]; !ok {
		return
	}
	delete(limits.holds, l)
	limits.apply()
}

var limits limitHolds

type limitHolds struct {
	mu    sync.Mutex
	holds map[*Limit]int64 // the holds not yet released, at what they hold
	prev  int64            // the limit before the first of them
}

// apply sets the least of the holds and prev (prev alone when none).
// Call with mu held.
func (h *limitHolds) apply() {
	least := h.prev
	for _, b := range h.holds {
		least = min(least, b)
	}
	if debug.SetMemoryLimit(-1) != least {
		debug.SetMemoryLimit(least)
	}
}
