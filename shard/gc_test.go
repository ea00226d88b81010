package shard

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mapthenet/mapthenet/internal/gctarget"
)

// Making a store raises the collector's target while its shards are made,
// and puts the previous one back after; overlapping calls restore it only
// when the last ends.
func TestCreateCollectsLess(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the store leaves the operator's collector alone")
	}
	before := gctarget.Percent()
	a := collectLess()
	b := collectLess()
	if got := gctarget.Percent(); got != createGCPercent {
		t.Errorf("while making shards: GC percent %d, want %d", got, createGCPercent)
	}
	a()
	a() // twice: once counts
	if got := gctarget.Percent(); got != createGCPercent {
		t.Errorf("one of two makes done: GC percent %d, want still %d", got, createGCPercent)
	}
	b()
	if got := gctarget.Percent(); got != before {
		t.Errorf("after: GC percent %d, want %d back", got, before)
	}

	var during []int
	orig := collectLess
	collectLess = func() func() {
		r := orig()
		during = append(during, gctarget.Percent())
		return r
	}
	t.Cleanup(func() { collectLess = orig })
	s, err := Open(filepath.Join(t.TempDir(), "store"), Options{Create: true, Shards: 3})
	must(t, err)
	must(t, s.Close())
	if len(during) != 1 || during[0] != createGCPercent {
		t.Errorf("making a store of 3 shards: GC percents %v, want one call at %d", during, createGCPercent)
	}
	if got := gctarget.Percent(); got != before {
		t.Errorf("after the make: GC percent %d, want %d back", got, before)
	}
}
