package graph

import "hash/maphash"

// nameCache maps committed domain names to their ids, keyed by a 128-bit
// keyed hash of the name (two maphash values under independent random
// seeds) rather than by the name: a lookup then compares 16 bytes held in
// the map instead of following a pointer to the name's bytes (that compare
// and its cache miss were half of a lookup's cost, and lookups, one per
// link, a tenth of ingest's CPU), and an entry takes some 30 bytes rather
// than a string's header, bytes and allocation (a quarter of the memory).
//
// Two different names share a key with probability 2^-128 per pair: over
// 10^7 names and 10^9 lookups, about 10^-20, far below a memory error. The
// seeds are random per process, so no one can craft names that collide.
type nameCache struct {
	seeds [2]maphash.Seed
	m     map[nameHash]uint32
	max   int
}

type nameHash [2]uint64

func newNameCache(max int) *nameCache {
	return &nameCache{seeds: [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}, m: map[nameHash]uint32{}, max: max}
}

func (c *nameCache) hash(name string) nameHash {
	return nameHash{maphash.String(c.seeds[0], name), maphash.String(c.seeds[1], name)}
}

// get returns name's id, if cached. A nil cache holds nothing.
func (c *nameCache) get(name string) (uint32, bool) {
	if c == nil {
		return 0, false
	}
	id, ok := c.m[c.hash(name)]
	return id, ok
}

// put remembers a committed name→id pair. When the cache is full it
// forgets an eighth of it, picked by Go's randomised map order: cheap, and
// the names linked often come straight back. It reports whether it forgot
// any.
func (c *nameCache) put(name string, id uint32) (forgot bool) {
	if c == nil {
		return false
	}
	if len(c.m) >= c.max {
		forgot = true
		drop := max(1, c.max/8)
		for k := range c.m {
			delete(c.m, k)
			if drop--; drop == 0 {
				break
			}
		}
	}
	c.m[c.hash(name)] = id
	return forgot
}

// putKey is put for a name given as bytes (an n/ key's tail), hashed
// without a copy: maphash.Bytes and String agree on equal contents.
func (c *nameCache) putKey(name []byte, id uint32) {
	h := nameHash{maphash.Bytes(c.seeds[0], name), maphash.Bytes(c.seeds[1], name)}
	if len(c.m) < c.max {
		c.m[h] = id
	}
}

func (c *nameCache) delete(name string) {
	if c != nil {
		delete(c.m, c.hash(name))
	}
}

func (c *nameCache) len() int {
	if c == nil {
		return 0
	}
	return len(c.m)
}

func (c *nameCache) clear() {
	if c != nil {
		clear(c.m)
	}
}
