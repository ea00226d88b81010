package graph

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"

	"github.com/mapthenet/mapthenet/data"
)

func TestRecordCache(t *testing.T) {
	c := newRecordCache(64)
	val := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	c.put(3, val(3, 'a'))
	if got := c.get(3); !bytes.Equal(got, val(3, 'a')) {
		t.Fatalf("get(3) = %q", got)
	}
	for _, id := range []uint32{0, 2, 4, 1000} {
		if got := c.get(id); got != nil {
			t.Errorf("get(%d) = %q, want nil (never put)", id, got)
		}
	}
	c.put(3, val(2, 'b')) // replaced
	if got := c.get(3); !bytes.Equal(got, val(2, 'b')) {
		t.Errorf("after a second put: %q", got)
	}
	c.put(5, val(5, 'x')) // larger than 64/16: not cached
	if got := c.get(5); got != nil {
		t.Errorf("a value over a sixteenth of the ring was cached: %q", got)
	}
	// Fill the ring with 4-byte values: the oldest are overwritten and
	// forgotten, the newest kept, none comes back wrong across the wrap.
	for i := range 40 {
		c.put(uint32(10+i), val(4, byte('A'+i)))
		for j := 0; j <= i; j++ {
			got := c.get(uint32(10 + j))
			switch {
			case got == nil:
				if i-j < 64/4-1 {
					t.Fatalf("after put %d: value %d forgotten while still in the ring", i, j)
				}
			case !bytes.Equal(got, val(4, byte('A'+j))):
				t.Fatalf("after put %d: value %d = %q", i, j, got)
			}
		}
	}
	c.reset()
	if got := c.get(49); got != nil {
		t.Errorf("after reset: %q", got)
	}
	var none *recordCache // disabled
	none.put(1, []byte("x"))
	if none.get(1) != nil {
		t.Error("a nil cache returned a value")
	}
}

// TestRecordCacheGrows: the ring starts small and doubles as it is
// written, up to its size; every value put before a growth reads back
// the same after it, and once the ring is full the oldest are forgotten.
func TestRecordCacheGrows(t *testing.T) {
	const size = 4 * recordCacheStart
	c := newRecordCache(size)
	if len(c.ring) != 0 {
		t.Fatalf("a new cache allocated %d bytes before its first put", len(c.ring))
	}
	val := func(id int) []byte { return bytes.Repeat([]byte{byte(id), byte(id >> 8)}, 500+id%7) }
	var lens []int
	const ids = 8000 // about 8 MB of values: past the size, so the ring wraps
	starts := make([]uint64, ids)
	for id := range ids {
		c.put(uint32(id), val(id))
		starts[id] = c.pos - uint64(len(val(id)))
		if l := len(c.ring); len(lens) == 0 || lens[len(lens)-1] != l {
			lens = append(lens, l)
		}
		if id%500 == 0 || id == ids-1 {
			for j := 0; j <= id; j++ {
				got := c.get(uint32(j))
				if got != nil && !bytes.Equal(got, val(j)) {
					t.Fatalf("after put %d (ring %d bytes): value %d reads back wrong", id, len(c.ring), j)
				}
				if got == nil && c.pos-starts[j]+1024 <= size { // a wrap skips less than a value
					t.Fatalf("after put %d: value %d forgotten although the ring holds it", id, j)
				}
			}
		}
	}
	want := []int{recordCacheStart, 2 * recordCacheStart, size}
	if !reflect.DeepEqual(lens, want) {
		t.Errorf("ring sizes %v, want %v", lens, want)
	}
	if c.get(0) != nil {
		t.Error("the first value is still there after the ring wrapped")
	}
	if got := c.get(ids - 1); !bytes.Equal(got, val(ids-1)) {
		t.Errorf("the last value reads %d bytes", len(got))
	}
}

// TestRecordCacheTransparent: a store with the record cache ends as one
// without it, over visits that reread records it holds, and a removal
// (which rewrites records under it).
func TestRecordCacheTransparent(t *testing.T) {
	run := func(opts Options) byName {
		opts.InMemory = true
		s, err := Open("", opts)
		must(t, err)
		defer s.Close()
		for round := range 3 {
			at := t0.AddDate(0, 0, round)
			var vs []*data.VisitResult
			for i := range 30 {
				v := visit(fmt.Sprintf("s%d.example", i), at, data.OutcomeOK,
					link(fmt.Sprintf("s%d.example", (i+round+1)%30), fmt.Sprint("r", round)))
				if round == 0 {
					v.Links = append(v.Links, link("gone.example"))
				}
				if round > 0 {
					// Partial: adds to the edge set the removal rewrote.
					v.Outcome, v.Complete = data.OutcomePartial, false
				}
				vs = append(vs, v)
			}
			if round == 1 {
				must(t, s.RemoveDomain("gone.example", "asked", "", at))
			}
			must(t, s.RecordVisits(vs))
		}
		return dumpByName(t, s)
	}
	with, without := run(Options{Create: true, RecordCache: 1 << 16}), run(Options{Create: true, RecordCache: -1})
	if !reflect.DeepEqual(with, without) {
		t.Errorf("with the record cache:\n%+v\nwithout:\n%+v", with, without)
	}
}
