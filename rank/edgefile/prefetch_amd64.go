package edgefile

import "unsafe"

// prefetchSlots asks the CPU to load, without waiting for them, the
// table slots (32 bytes each, from slots, index hash&mask) of the given
// hashes. Written in assembly because Go has no prefetch instruction: a
// plain load that misses the cache holds the core's reorder buffer until
// the data comes, so touching slots with loads overlapped only a few of
// their misses (79% of interning's own time at L went to waiting on
// them), where a prefetch retires at once and the misses of a whole group
// overlap while the group before is looked up.
//
//go:noescape
func prefetchSlots(slots unsafe.Pointer, mask uint64, hashes []uint64)

// prefetch starts loading the first slots that names of the hashes hs
// probe (see prefetchSlots). Call between enter and exit: the slots must
// not move. The result means nothing (see the portable version).
func (t *table) prefetch(hs []uint64) uint32 {
	if len(hs) > 0 {
		prefetchSlots(unsafe.Pointer(unsafe.SliceData(t.slots)), t.mask, hs)
	}
	return 0
}

// prefetchSlots's stride: a slot must be 32 bytes.
var _ [unsafe.Sizeof(slot{}) - 32]byte
var _ [32 - unsafe.Sizeof(slot{})]byte
