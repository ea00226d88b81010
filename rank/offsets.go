package rank

import (
	"fmt"
	"slices"
)

// offsets are a CSR's 64-bit edge offsets (a graph may have more than
// 2³² edges: the web's domain graph has 2 to 6 billion) kept in 32 bits a
// node: low[v] is the low offsetBits bits of node v's first in-edge, and
// steps lists, for each multiple k<<offsetBits the offsets pass, the first
// node whose offset reaches it (a node may be listed more than once). The
// high bits of v's offset are then the number of steps at or before v:
// none below 2³² edges, so the common path is one load, and a binary
// search in a list of a few entries above. Full uint64 offsets would cost
// 4 more bytes a domain (480 MB at 120 million domains) for nothing.
type offsets struct {
	low   []uint32 // len N+1
	steps []uint32
	bits  uint8
}

// offsetBits is the width of offsets.low's words: 32. Tests lower it
// (the hook of issue 16) so that the steps, the path of graphs of more
// than 2³² edges, are taken by small graphs.
var offsetBits uint8 = 32

// start is node v's first in-edge (v may be N: the number of edges).
// Below 2³² edges it is one load, inlined where it is called (the write
// of the rank file and the CSR's checks and sorts call it for every
// node: as a call it was 2% of ranking L); above, stepped looks the
// high bits up.
func (o *offsets) start(v uint32) uint64 {
	if len(o.steps) == 0 {
		return uint64(o.low[v])
	}
	return o.stepped(v)
}

// stepped is start of a graph whose offsets pass 2³² (or offsetBits).
func (o *offsets) stepped(v uint32) uint64 {
	k, _ := slices.BinarySearch(o.steps, v+1) // steps at or before v
	return uint64(k)<<o.bits | uint64(o.low[v])
}

// degree is node v's number of in-edges.
func (o *offsets) degree(v uint32) uint64 {
	if len(o.steps) == 0 {
		return uint64(o.low[v+1] - o.low[v])
	}
	return o.steppedDegree(v)
}

func (o *offsets) steppedDegree(v uint32) uint64 { return o.stepped(v+1) - o.stepped(v) }

// total is the number of edges.
func (o *offsets) total() uint64 { return o.start(uint32(len(o.low) - 1)) }

// offsetsOfDegrees turns deg, the in-degrees of n nodes with one more
// entry at the end (len n+1, its value ignored), into offsets, in place:
// deg becomes offsets.low.
func offsetsOfDegrees(deg []uint32) offsets {
	o := offsets{low: deg, bits: offsetBits}
	mask := uint64(1)<<o.bits - 1
	var total uint64
	last := len(deg) - 1
	for v := range deg {
		d := uint64(0)
		if v < last {
			d = uint64(deg[v])
		}
		deg[v] = uint32(total & mask)
		next := total + d
		for h := total >> o.bits; h < next>>o.bits; h++ {
			o.steps = append(o.steps, uint32(v+1))
		}
		total = next
	}
	return o
}

// check verifies that o describes n nodes and edges edges in order.
func (o *offsets) check(n uint32, edges int) error {
	if len(o.low) != int(n)+1 {
		return fmt.Errorf("rank: malformed CSR: %d offsets for %d nodes", len(o.low), n)
	}
	if !slices.IsSorted(o.steps) || (len(o.steps) > 0 && o.steps[len(o.steps)-1] > n) {
		return fmt.Errorf("rank: malformed CSR: offset steps out of order")
	}
	prev := uint64(0)
	for v := range n + 1 {
		s := o.start(v)
		if s < prev {
			return fmt.Errorf("rank: malformed CSR: offsets decrease at node %d", v)
		}
		prev = s
	}
	if prev != uint64(edges) {
		return fmt.Errorf("rank: malformed CSR: offsets end at %d, %d sources", prev, edges)
	}
	return nil
}
