package edgefile

import (
	"hash/maphash"
	"math/bits"
)

// Names are interned in shards, one goroutine each, so that interning,
// which is most of the work of reading an edge file (a cache miss or so
// per row in a table far bigger than the cache), keeps every core busy.
// A name's shard is the top bits of its hash (its slot in the shard's
// table comes from the low bits). Shard k gives its i-th name the id
// i*shards+k; ids are renumbered by name afterwards, so this numbering
// shows in no result.
type shardSet struct {
	shift  uint // a name of hash h is in shard h>>shift
	shards []*shard
}

// maxShards bounds the shards: ids are local*shards+k in 32 bits.
const maxShards = 8

func newShardSet(workers, sizeHint int) *shardSet {
	n := 1
	for n < workers && n < maxShards {
		n *= 2
	}
	set := &shardSet{shift: 64 - uint(bits.TrailingZeros(uint(n)))}
	seed := newInterner(0).seed
	for k := range n {
		in := newInterner(sizeHint / n)
		in.seed = seed // one hash function for all shards: the decoders hash once
		set.shards = append(set.shards, &shard{in: in, k: uint32(k), n: uint32(n), shift: set.shift})
	}
	return set
}

// seed is the seed of the hash every shard uses: callers hash names with
// maphash.String(seed, name) to pick their shard and slot.
func (set *shardSet) seed() maphash.Seed { return set.shards[0].in.seed }

// of is the shard of a name of hash h.
func (set *shardSet) of(h uint64) uint64 {
	if set.shift == 64 {
		return 0
	}
	return h >> set.shift
}

// names lists each shard's names by local id.
func (set *shardSet) names() [][]string {
	names := make([][]string, len(set.shards))
	for k, sh := range set.shards {
		names[k] = sh.in.names
	}
	return names
}

// count is the number of names interned so far (safe while the shards
// work).
func (set *shardSet) count() int64 {
	var n int64
	for _, sh := range set.shards {
		n += sh.in.count.Load()
	}
	return n
}

// bytes is the memory of the name table (once the shards are done).
func (set *shardSet) bytes() int64 {
	var b int64
	for _, sh := range set.shards {
		b += sh.in.bytes()
	}
	return b
}

// shard interns the names whose hash falls in it.
type shard struct {
	in    *interner
	k, n  uint32
	shift uint
}

func (sh *shard) mine(h uint64) bool { return sh.shift == 64 || uint32(h>>sh.shift) == sh.k }

func (sh *shard) id(s string, h uint64) uint32 {
	if s == "" {
		return emptyName
	}
	return sh.in.idHashed(s, h)*sh.n + sh.k
}

// intern fills the batch's ids of the names in this shard.
func (sh *shard) intern(b *batch) {
	for c, runs := range [2][]nameRun{b.src, b.dst} {
		rows := 0
		for i := range runs {
			rows += runs[i].len()
		}
		ids := b.ids[c][sh.k]
		if cap(ids) < rows {
			ids = make([]uint32, rows)
		}
		ids = ids[:rows]
		b.ids[c][sh.k] = ids
		pos := 0
		for i := range runs {
			r := &runs[i]
			if r.dict != nil {
				sh.dictionary(r.dict)
			} else if c == 0 {
				sh.sources(r, b.hashes[r.h0:r.h0+r.len()], b.changes[r.c0:r.c1], ids[pos:])
			} else {
				sh.targets(r, b.hashes[r.h0:r.h0+r.len()], ids[pos:])
			}
			pos += r.len()
		}
	}
}

// dictionary interns this shard's names of a dictionary, once.
func (sh *shard) dictionary(d *dictNames) {
	if d.done[sh.k] {
		return
	}
	r := nameRun{vals: d.vals, offs: d.offs}
	for i, h := range d.hashes {
		if sh.mine(h) {
			d.ids[i] = sh.id(r.name(i), h)
		}
	}
	d.done[sh.k] = true
}

// sources interns a run of src names: rows are usually grouped by
// source, so it interns the first name of each stretch of equal names
// (changes, from the decoder) and gives the stretch its id.
func (sh *shard) sources(r *nameRun, hs []uint64, changes []int32, ids []uint32) {
	for k, start := range changes {
		end := len(hs)
		if k+1 < len(changes) {
			end = int(changes[k+1])
		}
		h := hs[start]
		if !sh.mine(h) {
			continue
		}
		id := sh.id(r.name(int(start)), h)
		for i := int(start); i < end; i++ {
			ids[i] = id
		}
	}
}

// targets interns a run of dst names. The lookups go in groups: first
// touch the slots of a group's names in a tight loop, so that their cache
// misses overlap, then look them up. Touching a few rows ahead inside the
// lookup loop overlapped less.
func (sh *shard) targets(r *nameRun, hs []uint64, ids []uint32) {
	const group = 32
	n := len(hs)
	for g := 0; g < n; g += group {
		end := min(g+group, n)
		for i := g; i < end; i++ {
			if sh.mine(hs[i]) {
				sh.in.touch(hs[i])
			}
		}
		for i := g; i < end; i++ {
			if sh.mine(hs[i]) {
				ids[i] = sh.id(r.name(i), hs[i])
			}
		}
	}
}
