package edgefile

import (
	"hash/maphash"
	"sync/atomic"
	"unsafe"
)

// interner gives each distinct name a dense id, 0, 1, 2, ... in order of
// first appearance.
//
// Hand-written rather than a Go map because interning is most of the time
// of reading an edge file (one lookup per row, ten million rows for a
// graph of a million domains) and a map[string]uint32 costs about three
// cache misses a lookup at that size: the group's control word, the key's
// string header and the bytes it points to. Here a slot is 32 bytes (one
// cache line holds two) with the full hash, the id and the name itself
// when it is short (domain names mostly are), so a lookup usually costs
// one miss. Open addressing, linear probing, at most 70% full.
type interner struct {
	slots []slot
	mask  uint64
	seed  maphash.Seed
	names []string     // by id; views into arena blocks
	arena []byte       // current block; earlier blocks stay alive through names
	sink  uint32       // keeps touch's loads from being optimised away
	count atomic.Int64 // len(names), for other goroutines (the memory check)
}

type slot struct {
	hash uint64
	id1  uint32 // id+1; 0: empty
	n    uint8  // name length when inline (<= inlineMax)
	inl  [inlineMax]byte
}

const (
	inlineMax  = 19
	arenaBlock = 1 << 20
)

func newInterner(sizeHint int) *interner {
	size := 1024
	for size*7 < sizeHint*10 {
		size *= 2
	}
	return &interner{
		slots: makeLarge[slot](size, size),
		mask:  uint64(size - 1),
		seed:  maphash.MakeSeed(),
		names: makeLarge[string](0, sizeHint),
	}
}

// id returns s's id, adding it if new. s may be a view into a buffer that
// is reused later: a new name is copied into the arena.
func (in *interner) id(s string) uint32 {
	return in.idHashed(s, in.hash(s))
}

// hash is the hash id and idHashed use.
func (in *interner) hash(s string) uint64 { return maphash.String(in.seed, s) }

// touch loads the first slot a name of hash h would probe, so that it is
// in cache by the time idHashed looks there (a software prefetch).
func (in *interner) touch(h uint64) {
	in.sink += in.slots[h&in.mask].id1
}

// idHashed is id for a name whose hash(s) is h.
func (in *interner) idHashed(s string, h uint64) uint32 {
	for i := h & in.mask; ; i = (i + 1) & in.mask {
		sl := &in.slots[i]
		if sl.id1 == 0 {
			return in.add(sl, h, s)
		}
		if sl.hash != h {
			continue
		}
		if len(s) <= inlineMax {
			if int(sl.n) == len(s) && string(sl.inl[:len(s)]) == s {
				return sl.id1 - 1
			}
		} else if in.names[sl.id1-1] == s {
			return sl.id1 - 1
		}
	}
}

func (in *interner) add(sl *slot, h uint64, s string) uint32 {
	if len(in.arena)+len(s) > cap(in.arena) {
		in.arena = make([]byte, 0, max(arenaBlock, len(s)))
	}
	start := len(in.arena)
	in.arena = append(in.arena, s...)
	owned := ""
	if len(s) > 0 {
		owned = unsafe.String(&in.arena[start], len(s))
	}
	id := uint32(len(in.names))
	in.names = append(in.names, owned)
	in.count.Store(int64(len(in.names)))
	sl.hash, sl.id1 = h, id+1
	if len(s) <= inlineMax {
		sl.n = uint8(len(s))
		copy(sl.inl[:], s)
	}
	if uint64(len(in.names))*10 > (in.mask+1)*7 {
		in.grow()
	}
	return id
}

// grow doubles the table, placing every slot again by its stored hash.
func (in *interner) grow() {
	old := in.slots
	in.slots = makeLarge[slot](2*len(old), 2*len(old))
	in.mask = uint64(len(in.slots) - 1)
	for k := range old {
		sl := &old[k]
		if sl.id1 == 0 {
			continue
		}
		i := sl.hash & in.mask
		for in.slots[i].id1 != 0 {
			i = (i + 1) & in.mask
		}
		in.slots[i] = *sl
	}
}

// len is the number of distinct names.
func (in *interner) len() int { return len(in.names) }

// bytes is the interner's memory: its table, its name headers and the
// names' bytes (arena blocks are counted as the names fill them).
func (in *interner) bytes() int64 {
	b := int64(cap(in.slots))*int64(unsafe.Sizeof(slot{})) + int64(cap(in.names))*int64(unsafe.Sizeof(""))
	for _, s := range in.names {
		b += int64(len(s))
	}
	return b
}
