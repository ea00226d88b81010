package shard

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Making a store raises the collector's target while its shards are made,
// and puts the previous one back after; overlapping calls restore it only
// when the last ends.
func TestCreateCollectsLess(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the store leaves the operator's collector alone")
	}
	before := gcPercent()
	a := collectLess()
	b := collectLess()
	if got := gcPercent(); got != createGCPercent {
		t.Errorf("while making shards: GC percent %d, want %d", got, createGCPercent)
	}
	a()
	a() // twice: once counts
	if got := gcPercent(); got != createGCPercent {
		t.Errorf("one of two makes done: GC percent %d, want still %d", got, createGCPercent)
	}
	b()
	if got := gcPercent(); got != before {
		t.Errorf("after: GC percent %d, want %d back", got, before)
	}

	var during []int
	orig := collectLess
	collectLess = func() func() {
		r := orig()
		during = append(during, gcPercent())
		return r
	}
	t.Cleanup(func() { collectLess = orig })
	s, err := Open(filepath.Join(t.TempDir(), "store"), Options{Create: true, Shards: 3})
	must(t, err)
	must(t, s.Close())
	if len(during) != 1 || during[0] != createGCPercent {
		t.Errorf("making a store of 3 shards: GC percents %v, want one call at %d", during, createGCPercent)
	}
	if got := gcPercent(); got != before {
		t.Errorf("after the make: GC percent %d, want %d back", got, before)
	}
}
