package edgefile

import (
	"errors"
	"hash/maphash"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"
)

// table gives each distinct name a dense id. Every reader (one a worker,
// see reader) looks names up and adds them in the one table at once, so
// that each row is read, hashed and interned once, by whichever core
// decoded it, and the names of a page are interned while the page is in
// cache.
//
// Hand-written rather than a Go map (or sync.Map) because interning is
// most of the time of reading an edge file (one lookup a row, a hundred
// million rows for a graph of ten million domains) and a
// map[string]uint32 costs about three cache misses a lookup at that size:
// the group's control word, the key's string header and the bytes it
// points to. Here a slot is 32 bytes (one cache line holds two) with the
// full hash, the id and the name itself when it is short (domain names
// mostly are), so a lookup usually costs one miss. Open addressing,
// linear probing, at most 70% full.
//
// Concurrency: a reader claims an empty slot by a compare-and-swap of
// its id word (empty to busy), writes the slot and then publishes the id
// with an atomic store; a reader that loads a published id sees the rest
// of the slot. The table grows (doubles) under mu's write lock, which
// waits for the readers' windows (see enter): a reader holds the read
// lock while it interns at most window names.
type table struct {
	mu      sync.RWMutex
	slots   []slot
	mask    uint64
	seed    maphash.Seed
	readers []*names // by reader index: the names each added
	// dst is the target array the readers fill (see Read): here because
	// it grows under mu too.
	dst  []uint32
	rows int64 // the file's rows: dst never grows past it
}

type slot struct {
	hash uint64
	id1  uint32 // id+1; 0: empty; busy: being written (atomic)
	n    uint8  // name length when inline (<= inlineMax); longName: see ref
	inl  [inlineMax]byte
}

const (
	inlineMax  = 19
	longName   = 0xFF
	busy       = ^uint32(0)
	arenaBlock = 8 << 20
	// firstArenaBlock is the size of an arena's first block, doubled
	// arenaDoublings times up to arenaBlock: a small edge file's names
	// take little.
	firstArenaBlock = 64 << 10
	arenaDoublings  = 7
	// window is the most names a reader interns between enter and exit.
	window = 1024
	// maxID is the largest id: id+1 must not be busy, and emptyName
	// (^uint32(0)) marks an empty dictionary entry.
	maxID = busy - 2
)

// errTooManyNames is the error of a file with more distinct names than
// 32-bit ids can number.
var errTooManyNames = errors.New("more than 2³²-2 distinct domain names")

// names are the names one reader added, by local id: the reader of index
// w of R gives its i-th name the id i*R+w (ids are renumbered by name
// afterwards, so this numbering shows in no result). Only their reader
// appends to them; the other readers read the bytes of its long names
// (through blocks) to compare them.
type names struct {
	list   []NameRef // by local id: where in the arena blocks
	arena  nameArena
	blocks atomic.Pointer[[][]byte] // arena.blocks, as published to the other readers
	count  atomic.Int64             // len(list) as of the reader's last exit
	w, r   uint32                   // reader index and number of readers
}

func newTable(readers, sizeHint int, rows int64) *table {
	size := 1024
	for size*7 < (sizeHint+readers*window)*10 {
		size *= 2
	}
	t := &table{slots: makeLarge[slot](size, size), mask: uint64(size - 1), seed: maphash.MakeSeed(), rows: rows}
	for w := range readers {
		nm := &names{list: makeLarge[NameRef](0, sizeHint/readers+window), arena: nameArena{reader: uint32(w)}, w: uint32(w), r: uint32(readers)}
		nm.blocks.Store(&[][]byte{})
		t.readers = append(t.readers, nm)
	}
	return t
}

// hash is the hash the table places a name by.
func (t *table) hash(s string) uint64 { return maphash.String(t.seed, s) }

// count is the number of names added (as of the readers' last exits;
// safe while they work).
func (t *table) count() int64 {
	var n int64
	for _, nm := range t.readers {
		n += nm.count.Load()
	}
	return n
}

// enter is called by a reader before it interns at most window names:
// it returns with the read lock held, growing the table first when the
// names of every reader's window might fill it past 70%.
func (t *table) enter() {
	for {
		t.mu.RLock()
		if !t.full() {
			return
		}
		t.mu.RUnlock()
		t.mu.Lock()
		if t.full() {
			t.grow()
		}
		t.mu.Unlock()
	}
}

// exit ends a reader's window.
func (t *table) exit(nm *names) {
	nm.count.Store(int64(len(nm.list)))
	t.mu.RUnlock()
}

func (t *table) full() bool {
	return (t.count()+int64(len(t.readers)*window))*10 > int64(len(t.slots))*7
}

// grow doubles the table, placing every slot again by its stored hash
// (under the write lock: no slot is busy).
func (t *table) grow() {
	old := t.slots
	t.slots = makeLarge[slot](2*len(old), 2*len(old))
	t.mask = uint64(len(t.slots) - 1)
	for k := range old {
		sl := &old[k]
		if sl.id1 == 0 {
			continue
		}
		i := sl.hash & t.mask
		for t.slots[i].id1 != 0 {
			i = (i + 1) & t.mask
		}
		t.slots[i] = *sl
	}
}

// reserveRows makes sure the target array holds the rows below end,
// growing it (under the write lock) when the footer's row count was not
// trusted in full (see Read).
func (t *table) reserveRows(end int64) {
	t.mu.RLock()
	ok := int64(len(t.dst)) >= end
	t.mu.RUnlock()
	if ok {
		return
	}
	t.mu.Lock()
	if have := int64(len(t.dst)); have < end {
		n := int(min(t.rows, max(end, 2*have)))
		dst := makeLarge[uint32](n, n)
		copy(dst, t.dst)
		t.dst = dst
	}
	t.mu.Unlock()
}

// touch loads the first slot a name of hash h would probe, so that it is
// in cache by the time id looks there (a software prefetch); the result
// means nothing.
func (t *table) touch(h uint64) uint32 {
	return atomic.LoadUint32(&t.slots[h&t.mask].id1)
}

// id returns the id of s (not empty), of hash h, adding it as reader nm's
// when new. s may be a view into a buffer that is reused later: a new
// name is copied into nm's arena. Call between enter and exit.
func (t *table) id(nm *names, s string, h uint64) (uint32, error) {
	slots, mask := t.slots, t.mask
	for i := h & mask; ; i = (i + 1) & mask {
		sl := &slots[i]
		id1 := atomic.LoadUint32(&sl.id1)
		if id1 == 0 {
			if atomic.CompareAndSwapUint32(&sl.id1, 0, busy) {
				return t.add(sl, nm, s, h)
			}
			id1 = atomic.LoadUint32(&sl.id1)
		}
		for id1 == busy { // another reader is writing it: a few dozen ns
			runtime.Gosched()
			id1 = atomic.LoadUint32(&sl.id1)
		}
		if sl.hash == h && t.same(sl, id1-1, s) {
			return id1 - 1, nil
		}
	}
}

// same tells whether the published slot sl, of id id, holds s.
func (t *table) same(sl *slot, id uint32, s string) bool {
	if sl.n != longName {
		return int(sl.n) == len(s) && string(sl.inl[:len(s)]) == s
	}
	block, off, n := sl.ref()
	if int(n) != len(s) {
		return false
	}
	owner := t.readers[id%uint32(len(t.readers))]
	b := (*owner.blocks.Load())[block]
	return string(b[off:off+n]) == s
}

func (sl *slot) ref() (block, off, n uint32) {
	p := unsafe.Pointer(&sl.inl[0])
	return *(*uint32)(p), *(*uint32)(unsafe.Add(p, 4)), *(*uint32)(unsafe.Add(p, 8))
}

func (sl *slot) setRef(block, off, n uint32) {
	p := unsafe.Pointer(&sl.inl[0])
	*(*uint32)(p), *(*uint32)(unsafe.Add(p, 4)), *(*uint32)(unsafe.Add(p, 8)) = block, off, n
}

// add writes the claimed slot sl for s, a new name of reader nm, and
// publishes it.
func (t *table) add(sl *slot, nm *names, s string, h uint64) (uint32, error) {
	local := uint64(len(nm.list))
	id := local*uint64(nm.r) + uint64(nm.w)
	if id > uint64(maxID) {
		atomic.StoreUint32(&sl.id1, 0)
		return 0, errTooManyNames
	}
	ref, grew, err := nm.arena.add(s)
	if err != nil {
		atomic.StoreUint32(&sl.id1, 0)
		return 0, err
	}
	if grew {
		blocks := nm.arena.blocks
		nm.blocks.Store(&blocks)
	}
	nm.list = append(nm.list, ref)
	sl.hash = h
	if len(s) <= inlineMax {
		sl.n = uint8(len(s))
		copy(sl.inl[:], s)
	} else {
		sl.n = longName
		_, block, off, n := ref.unpack()
		sl.setRef(block, off, n)
	}
	atomic.StoreUint32(&sl.id1, uint32(id)+1)
	return uint32(id), nil
}

// names are the readers' names (the name of id i*R+w is reader w's
// i-th, see names). Call once the readers are done.
func (t *table) names() *Names {
	n := &Names{blocks: make([][][]byte, len(t.readers)), parts: make([][]NameRef, len(t.readers))}
	for w, nm := range t.readers {
		n.blocks[w], n.parts[w] = *nm.blocks.Load(), nm.list
	}
	return n
}

// bytes is the table's memory: its slots, the names' references and
// bytes (arena blocks are counted as the names fill them). Call once the
// readers are done.
func (t *table) bytes() int64 {
	return int64(cap(t.slots))*int64(unsafe.Sizeof(slot{})) + t.names().bytes()
}
