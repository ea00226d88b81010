package graph

import (
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// A batch of one visit allocates little: a store of K shards splits each
// batch of visits K ways, so a batch's fixed cost (its slab's first
// block, its first block of records) is paid K times over (at 64 shards,
// 64 KiB and 256 records each once were most of a fleet node's
// recording cost).
func TestSmallBatchAllocatesLittle(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "store"), Options{Create: true, NameCache: -1, RecordCache: -1})
	must(t, err)
	defer s.Close()
	record := func(i int) {
		must(t, s.RecordVisits([]*data.VisitResult{visit(fmt.Sprintf("a%03d.example", i), t0.Add(time.Duration(i)), data.OutcomeOK, link("hub.example"), link(fmt.Sprintf("b%03d.example", i)))}))
	}
	for i := range 5 {
		record(i) // warm up
	}
	const n = 40
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		record(100 + i)
	}
	runtime.ReadMemStats(&after)
	per := (after.TotalAlloc - before.TotalAlloc) / n
	t.Logf("%d bytes allocated per batch of one visit", per)
	if per > 96<<10 {
		t.Errorf("a batch of one visit allocated %d KiB, want under 96 KiB", per>>10)
	}
}
