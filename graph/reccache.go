package graph

import "sync/atomic"

// recordCache keeps the d/<id> values the store committed last, so that a
// visit of a domain whose record was written recently (a domain found in
// a link and then visited, one visited again) does not read it back from
// Badger. A Badger read looks in every memtable and every level that may
// hold the key (it cannot stop at the newest version it finds), and was a
// third of ingest's CPU in BenchmarkRecordVisits.
//
// Hand-written rather than a general cache (ristretto, say) because ids are
// dense: the index is a slice, the values sit in one ring of bytes written
// in order, and the oldest are forgotten by being overwritten, with no
// per-entry allocation, lock or eviction policy to pay for.
//
// The cache is written only when a batch has committed (batch.apply) and
// read only by writers, all under the store's writer mutex, so it always
// holds committed values; anything else that writes d/ keys (a removal)
// clears it.
//
// The ring grows as it is written, doubling up to its size, rather than
// being allocated whole: a store of a few records (a fleet node's K
// shards, most of them small or not held) does not pay for zeroing a
// ring it never fills. Until it reaches its size nothing was overwritten,
// so every position is its own offset and growing copies them as they are.
type recordCache struct {
	ring []byte
	size uint64       // what the ring grows to
	pos  uint64       // bytes ever written to the ring; the next write goes at pos % len(ring)
	at   []uint64     // per id: 1 + its value's stream position << lenBits | length; 0 when not cached
	held atomic.Int64 // len(ring), for HeapHeld from any goroutine
}

const (
	lenBits = 20 // values up to 1 MiB; larger ones are not cached
	lenMask = 1<<lenBits - 1
)

// DefaultRecordCache is the ring's size when Options.RecordCache is 0.
// It holds the records of a million or so recently written domains.
const DefaultRecordCache = 256 << 20

// recordCacheStart is the ring's first allocation (at most its size).
const recordCacheStart = 1 << 20

func newRecordCache(size int) *recordCache {
	if size <= 0 {
		return nil
	}
	return &recordCache{size: uint64(size)}
}

// grow makes room for n more bytes at pos while the ring is smaller than
// its size: it doubles (at least to pos+n), up to the size.
func (c *recordCache) grow(n uint64) {
	have := uint64(len(c.ring))
	if c.pos+n <= have || have >= c.size {
		return
	}
	want := max(min(c.size, recordCacheStart), 2*have, c.pos+n)
	ring := make([]byte, min(want, c.size))
	copy(ring, c.ring[:c.pos])
	c.ring = ring
	c.held.Store(int64(len(ring)))
}

// get returns id's value, valid until the next put, or nil.
func (c *recordCache) get(id uint32) []byte {
	if c == nil || int(id) >= len(c.at) || c.at[id] == 0 {
		return nil
	}
	e := c.at[id] - 1
	start, n := e>>lenBits, e&lenMask
	if c.pos-start > uint64(len(c.ring)) {
		return nil // overwritten since
	}
	off := start % uint64(len(c.ring))
	return c.ring[off : off+n : off+n]
}

// put records id's committed value.
func (c *recordCache) put(id uint32, v []byte) {
	if c == nil {
		return
	}
	if int(id) >= len(c.at) {
		c.at = append(c.at, make([]uint64, int(id)+1-len(c.at)+len(c.at)/4)...)
	}
	n := uint64(len(v))
	if n > lenMask || n > c.size/16 {
		c.at[id] = 0
		return
	}
	c.grow(n)
	size := uint64(len(c.ring))
	if off := c.pos % size; off+n > size {
		c.pos += size - off // no value wraps: skip to the ring's start
	}
	if c.pos+n >= 1<<(64-lenBits) {
		// Positions would no longer fit their bits (after 16 TiB of
		// records): start over.
		clear(c.at)
		c.pos = 0
	}
	start := c.pos
	copy(c.ring[start%size:], v)
	c.pos += n
	c.at[id] = (start<<lenBits | n) + 1
}

// reset forgets everything.
func (c *recordCache) reset() {
	if c == nil {
		return
	}
	clear(c.at)
}
