package crawl

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
)

// The soft memory limit leaves room for what the shards of a store hold
// for themselves: one shard or four get the default limit, 64 writable
// shards (64 memtable arenas of 20.8 MiB) more, by what they hold beyond
// a default store's most; read-only shards hold no arena.
func TestMemoryLimitCountsWhatTheStoreHolds(t *testing.T) {
	base := graph.HeapFloor(graph.Options{})
	if want := int64(64<<20) + 2*(64<<20*15/100) + graph.DefaultRecordCache + 256<<20; base != want {
		t.Fatalf("HeapFloor(default) = %d, want %d", base, want)
	}
	for _, tc := range []struct {
		shards   int
		readOnly bool
		more     bool
	}{{1, false, false}, {4, false, false}, {64, false, true}, {64, true, false}} {
		st, err := shard.Open(t.TempDir(), shard.Options{Create: true, Shards: tc.shards, ReadOnlyShards: tc.readOnly})
		if err != nil {
			t.Fatal(err)
		}
		// Badger's block cache counts its cost asynchronously, so what the
		// store holds can change between two reads: take a limit that was
		// read between two equal figures.
		var held, limit int64
		for range 100 {
			held = st.HeapHeld()
			limit = memoryLimit(st)
			if st.HeapHeld() == held {
				break
			}
		}
		st.Close()
		want := int64(DefaultMemoryLimit) + max(0, held-base)
		if limit != want {
			t.Errorf("%d shards (read-only %v): limit %d MiB, want %d MiB", tc.shards, tc.readOnly, limit>>20, want>>20)
		}
		if got := limit > DefaultMemoryLimit; got != tc.more {
			t.Errorf("%d shards (read-only %v, holding %d MiB): limit %d MiB above the default: %v, want %v",
				tc.shards, tc.readOnly, held>>20, limit>>20, got, tc.more)
		}
		// 64 arenas of 16 MiB memtables: 1.3 GiB.
		if tc.more && held < 64*(16<<20) {
			t.Errorf("64 writable shards hold %d MiB, want at least their 64 memtables", held>>20)
		}
	}
	if got := memoryLimit(struct{}{}); got != DefaultMemoryLimit {
		t.Errorf("a store that says nothing of its heap: %d, want the default", got)
	}
}

// The limit follows the shards a fleet node opens for writing as it takes
// them, at once (the store says when: the recheck here is an hour away),
// and the previous limit is back when the crawl ends.
func TestBoundHeapFollowsWritableShards(t *testing.T) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOGC or GOMEMLIMIT is set: the crawl leaves the operator's limit alone, so there is nothing to follow")
	}
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Skip("a memory limit is set already: the crawl leaves it alone")
	}
	st, err := shard.Open(t.TempDir(), shard.Options{Create: true, Shards: 64, ReadOnlyShards: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	restore := boundHeap(st, time.Hour)
	if got := debug.SetMemoryLimit(-1); got != DefaultMemoryLimit {
		t.Errorf("no shard writable: limit %d MiB, want the default", got>>20)
	}
	for i := range 40 {
		if err := st.SetWritable(i, true); err != nil {
			t.Fatal(err)
		}
	}
	want := memoryLimit(st)
	if want <= DefaultMemoryLimit {
		t.Fatalf("40 writable shards: memoryLimit %d MiB, want more than the default", want>>20)
	}
	// Near what the shards hold now: their block caches still change by a
	// few bytes as the opens settle, so not to the byte.
	near := func() bool {
		want = memoryLimit(st)
		d := debug.SetMemoryLimit(-1) - want
		return d > -1<<20 && d < 1<<20
	}
	deadline := time.Now().Add(10 * time.Second)
	for !near() && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // the limit is set on boundHeap's own goroutine
	}
	if got := debug.SetMemoryLimit(-1); !near() {
		t.Errorf("40 writable shards: limit %d MiB, want %d MiB", got>>20, want>>20)
	}
	restore()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("after the crawl: limit %d, want none", got)
	}
}
