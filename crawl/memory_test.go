package crawl

import (
	"testing"

	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
)

// The soft memory limit leaves room for what a store of many shards holds
// before the crawl does anything: one shard gets the default limit, 64
// shards (64 memtable arenas and their caches) get more, by their floors.
func TestMemoryLimitCountsTheStoresFloor(t *testing.T) {
	base := graph.HeapFloor(graph.Options{})
	if want := int64(64<<20) + 2*(64<<20*15/100) + graph.DefaultRecordCache + 256<<20; base != want {
		t.Fatalf("HeapFloor(default) = %d, want %d", base, want)
	}
	for _, tc := range []struct {
		shards int
		more   bool
	}{{1, false}, {4, false}, {64, true}} {
		st, err := shard.Open(t.TempDir(), shard.Options{Create: true, Shards: tc.shards, ReadOnlyShards: tc.shards == 64})
		if err != nil {
			t.Fatal(err)
		}
		floor := st.HeapFloor()
		limit := memoryLimit(st)
		st.Close()
		want := int64(DefaultMemoryLimit) + max(0, floor-base)
		if limit != want {
			t.Errorf("%d shards: limit %d MiB, want %d MiB", tc.shards, limit>>20, want>>20)
		}
		if got := limit > DefaultMemoryLimit; got != tc.more {
			t.Errorf("%d shards (floor %d MiB): limit %d MiB above the default: %v, want %v", tc.shards, floor>>20, limit>>20, got, tc.more)
		}
		// 64 shards of 16 MiB memtables and 16 MiB caches: about 3.3 GiB.
		if tc.shards == 64 && limit < 3<<30 {
			t.Errorf("64 shards: limit %d MiB, want room for 64 arenas and caches (over 3 GiB)", limit>>20)
		}
	}
	if got := memoryLimit(struct{}{}); got != DefaultMemoryLimit {
		t.Errorf("a store that says nothing of its floor: %d, want the default", got)
	}
}
