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
