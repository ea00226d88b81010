package graph

import "hash/maphash"

// nameCache maps committed domain names to their ids, keyed by a 96-bit
// keyed hash of the name rather than by the name. Hand-written (a table of
// 16-byte slots with linear probing) because a lookup, one per link, was a
// tenth of ingest's CPU as a Go map[string]uint32: following the map's
// control word, its slot and then the name's bytes cost three or four
// cache misses, where a slot here holds all a lookup needs, and its
// neighbours share the cache line. A slot is 16 bytes rather than a
// string's header, bytes and allocation, and holds no pointer, so the
// collector has nothing to walk.
//
// Two different names share a key with probability 2^-95 per pair: over
// 10^7 names and 10^9 lookups, about 10^-13, far below the odds of a
// memory error. The seeds are random per process, so no one can craft
// names that collide.
type nameCache struct {
	seeds [2]maphash.Seed
	slots []nameSlot // a power of two long; a zero slot is empty
	n     int
	max   int
}

// nameSlot is one cached name: h is the first hash with its low bit set
// (so never zero), tagID the second hash's top 32 bits over the id.
type nameSlot struct{ h, tagID uint64 }

func newNameCache(max int) *nameCache {
	return &nameCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, max: max,
		slots: make([]nameSlot, 1024)}
}

func (c *nameCache) key(h1, h2 uint64) (uint64, uint64) { return h1 | 1, h2 >> 32 << 32 }

func (c *nameCache) hash(name string) (uint64, uint64) {
	return c.key(maphash.String(c.seeds[0], name), maphash.String(c.seeds[1], name))
}

// home is where a key's probe starts.
func (c *nameCache) home(h uint64) int { return int(h>>1) & (len(c.slots) - 1) }

// find returns the slot holding the key, or the empty slot ending its
// probe.
func (c *nameCache) find(h, tag uint64) int {
	mask := len(c.slots) - 1
	for i := c.home(h); ; i = (i + 1) & mask {
		s := &c.slots[i]
		if s.h == 0 || s.h == h && s.tagID&^0xffffffff == tag {
			return i
		}
	}
}

// get returns name's id, if cached. A nil cache holds nothing.
func (c *nameCache) get(name string) (uint32, bool) {
	if c == nil {
		return 0, false
	}
	s := c.slots[c.find(c.hash(name))]
	return uint32(s.tagID), s.h != 0
}

// put remembers a committed name→id pair. When the cache is full it
// forgets an eighth of it (every eighth name in table order, which is
// hash order: cheap, and the names linked often come straight back). It
// reports whether it forgot any.
func (c *nameCache) put(name string, id uint32) (forgot bool) {
	if c == nil {
		return false
	}
	h, tag := c.hash(name)
	return c.insert(h, tag, id)
}

// putKey is put for a name given as bytes (an n/ key's tail), hashed
// without a copy (maphash.Bytes and String agree on equal contents). It
// forgets nothing: it fills the cache at Open, and stops when full.
func (c *nameCache) putKey(name []byte, id uint32) {
	if c.n < c.max {
		h, tag := c.key(maphash.Bytes(c.seeds[0], name), maphash.Bytes(c.seeds[1], name))
		c.insert(h, tag, id)
	}
}

func (c *nameCache) insert(h, tag uint64, id uint32) (forgot bool) {
	i := c.find(h, tag)
	if c.slots[i].h != 0 {
		c.slots[i].tagID = tag | uint64(id)
		return false
	}
	switch {
	case c.n >= c.max:
		c.rebuild(len(c.slots), true)
		forgot = true
		i = c.find(h, tag)
	case (c.n+1)*10 > len(c.slots)*7: // at most 70% full: short probes
		c.rebuild(2*len(c.slots), false)
		i = c.find(h, tag)
	}
	c.slots[i] = nameSlot{h, tag | uint64(id)}
	c.n++
	return forgot
}

// rebuild moves the names into a table of size slots, dropping an eighth
// of them (at least one), evenly spread, when thin is set.
func (c *nameCache) rebuild(size int, thin bool) {
	old := c.slots
	step := 0
	if thin {
		step = max(1, min(8, c.n))
	}
	c.slots = make([]nameSlot, size)
	c.n = 0
	k := 0
	for _, s := range old {
		if s.h == 0 {
			continue
		}
		if k++; step > 0 && k%step == 0 {
			continue
		}
		c.slots[c.find(s.h, s.tagID&^0xffffffff)] = s
		c.n++
	}
}

func (c *nameCache) delete(name string) {
	if c == nil {
		return
	}
	i := c.find(c.hash(name))
	if c.slots[i].h == 0 {
		return
	}
	// Backward-shift deletion: later slots of the probe run whose home
	// is not between the gap and them move into the gap, so that every
	// probe still finds its key before an empty slot.
	mask := len(c.slots) - 1
	for j := (i + 1) & mask; c.slots[j].h != 0; j = (j + 1) & mask {
		k := c.home(c.slots[j].h)
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			c.slots[i] = c.slots[j]
			i = j
		}
	}
	c.slots[i] = nameSlot{}
	c.n--
}

func (c *nameCache) len() int {
	if c == nil {
		return 0
	}
	return c.n
}

func (c *nameCache) clear() {
	if c != nil {
		clear(c.slots)
		c.n = 0
	}
}
