package rank

import "unsafe"

// interner gives each distinct name a dense id, 0, 1, 2, ... in order of
// first appearance. It is a Go map from name to id, but the map's keys are
// views into large append-only byte arenas instead of one allocation per
// name: ten million names cost a few dozen arena blocks, not ten million
// objects for the garbage collector to trace. Lookups of names that are
// already known do not allocate (the compiler turns m[string(b)] and
// lookups of unsafe views into plain map reads).
type interner struct {
	ids   map[string]uint32
	names []string
	arena []byte // current block; names point into it and earlier blocks
}

const arenaBlock = 1 << 20

func newInterner(sizeHint int) *interner {
	return &interner{ids: make(map[string]uint32, sizeHint), names: make([]string, 0, sizeHint)}
}

// id returns s's id, adding it if new. s may be a view into a buffer that
// is reused later: a new name is copied into the arena first.
func (in *interner) id(s string) uint32 {
	if id, ok := in.ids[s]; ok {
		return id
	}
	return in.add(s)
}

func (in *interner) add(s string) uint32 {
	if len(in.arena)+len(s) > cap(in.arena) {
		in.arena = make([]byte, 0, max(arenaBlock, len(s)))
	}
	start := len(in.arena)
	in.arena = append(in.arena, s...)
	owned := unsafe.String(unsafe.SliceData(in.arena[start:]), len(s))
	if len(s) == 0 {
		owned = ""
	}
	id := uint32(len(in.names))
	in.ids[owned] = id
	in.names = append(in.names, owned)
	return id
}

// len is the number of distinct names.
func (in *interner) len() int { return len(in.names) }
