package graph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
)

// batch is one write transaction, prepared and then committed. It keeps
// the domain records it touches in memory and writes each once at the
// end, so a batch of visits that share domains does not rewrite them per
// visit. It reads through a view of the store opened before it started,
// plus, in a pipelined RecordVisits (pipeline.go), the writes of the batch
// still committing ahead of it (over). The store's caches (name→id,
// followed bits, id counter) change only after the commit succeeds: a
// failed transaction leaves no trace, and its ids are handed out again, so
// ids stay dense.
type batch struct {
	s        *Store
	view     view   // read transactions: [0] the writer's, then one per prefetch helper
	over     *batch // the batch committing ahead of this one, or nil
	baseID   uint32 // the id counter this batch starts from
	nextID   uint32
	newNames map[string]uint32
	found    map[string]uint32 // names read from the database, cached after commit
	recs     map[uint32]*record
	dirty    map[uint32]struct{}
	followed map[uint32]struct{}
	writes   []write // what the commit sets and deletes, in order
	flushed  []flushedRecord

	slab          slab   // the batch's keys and values
	stBuf, adjBuf []byte // scratch for encoding a record
	valBuf        []byte
	sortBuf       []uint64 // scratch for sorting a visit's links
	recBlock      []record // newRecord's block
	recBlockSize  int      // the size of the last block newRecord made

	// Set by the pipeline (pipeline.go), under s.mu but for err.
	done    chan struct{} // closed when the commit has returned
	err     error         // the commit's error, read after done
	settled bool          // apply has run (or the commit failed)
}

// write is one key the commit sets, or deletes when del is set.
type write struct {
	key, val []byte
	del      bool
}

// flushedRecord is a record value the batch writes, for the record cache.
type flushedRecord struct {
	id  uint32
	val []byte
}

// view is a batch's read transactions, all opened at one moment (so they
// see the same commits): one for the writer and one per prefetch helper,
// since a Badger transaction is not for concurrent use.
type view []*badger.Txn

func (s *Store) openView() view {
	v := make(view, prefetchWorkers+1)
	for i := range v {
		v[i] = s.db.NewTransaction(false)
	}
	return v
}

func (v view) discard() {
	for _, t := range v {
		t.Discard()
	}
}

// slab hands out a batch's keys and values from a few large blocks rather
// than an allocation each: Badger holds them until the commit anyway, and
// the small allocations (a few per visit) and the collector's work on
// them were a tenth of ingest's CPU in BenchmarkRecordVisits.
//
// Its blocks start at 4 KiB and double up to 64 KiB: a store of K shards
// splits each batch of visits K ways, and at 64 shards a 64 KiB first
// block per shard (zeroed, as every allocation from 32 KiB up is) was
// most of a fleet node's recording cost for a few visits per shard.
type slab struct{ block []byte }

// copy returns a copy of p in the slab, with its capacity clipped so that
// an append to it cannot run into the next one.
func (s *slab) copy(p []byte) []byte {
	if len(p) > cap(s.block)-len(s.block) {
		s.block = make([]byte, 0, max(min(2*cap(s.block), 64<<10), 4<<10, len(p)))
	}
	start := len(s.block)
	s.block = append(s.block, p...)
	return s.block[start:len(s.block):len(s.block)]
}

// record is one domain's d/<id> value in a batch: its state and its
// out-edges, the latter kept encoded until a visit needs them.
type record struct {
	st      data.DomainState // FollowedIn: the record's own mark only (markFollowed)
	raw     []byte           // encoded edges, while not decoded
	edges   []edge
	decoded bool
}

// newRecord hands out a record from a block, rather than an allocation
// per new domain.
func (b *batch) newRecord() *record {
	if len(b.recBlock) == 0 {
		// From 16 up to 256, doubling, as the slab's blocks do.
		b.recBlockSize = max(16, min(256, 2*b.recBlockSize))
		b.recBlock = make([]record, b.recBlockSize)
	}
	r := &b.recBlock[0]
	b.recBlock = b.recBlock[1:]
	return r
}

// newBatch starts a batch that reads through v and sees over's writes.
func (s *Store) newBatch(v view, over *batch) *batch {
	base := s.nextID
	if over != nil {
		base = over.nextID
	}
	return &batch{
		s:        s,
		view:     v,
		over:     over,
		baseID:   base,
		nextID:   base,
		newNames: map[string]uint32{},
		found:    map[string]uint32{},
		recs:     map[uint32]*record{},
		dirty:    map[uint32]struct{}{},
		followed: map[uint32]struct{}{},
	}
}

// write runs fn in one transaction and commits it. s.mu must be held and
// no batch in flight (lockWrite drains the pipeline).
func (s *Store) write(fn func(*batch) error) error {
	v := s.openView()
	defer v.discard()
	b := s.newBatch(v, nil)
	if err := fn(b); err != nil {
		return err
	}
	b.flush()
	if err := s.commit(b); err != nil {
		return err
	}
	b.apply()
	return nil
}

// ErrBatchTooLarge: a RecordVisits batch does not fit in one transaction
// (visits naming many new domains); it wrote nothing, and the same visits
// in smaller batches can be recorded.
var ErrBatchTooLarge = errors.New("graph: the batch is too large for one transaction")

// commit writes a prepared batch in one Badger transaction.
func (s *Store) commit(b *batch) error {
	if testCommitHook != nil {
		if err := testCommitHook(b); err != nil {
			return err
		}
	}
	if err := s.checkFence(); err != nil {
		return err
	}
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	for i := range b.writes {
		w := &b.writes[i]
		var err error
		if w.del {
			err = txn.Delete(w.key)
		} else {
			err = txn.Set(w.key, w.val)
		}
		if errors.Is(err, badger.ErrTxnTooBig) {
			return fmt.Errorf("%w; record fewer visits at once: %w", ErrBatchTooLarge, err)
		}
		if err != nil {
			return err
		}
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("graph: commit: %w", err)
	}
	return nil
}

// testCommitHook, when set by a test, runs before each commit; an error
// fails the commit.
var testCommitHook func(*batch) error

// set and del queue a write for the commit. k and v must stay unchanged
// until then (the slab's copies do).
func (b *batch) set(k, v []byte) { b.writes = append(b.writes, write{key: k, val: v}) }
func (b *batch) del(k []byte)    { b.writes = append(b.writes, write{key: k, del: true}) }

// flush queues every changed domain record, and the id counter.
func (b *batch) flush() {
	var key [6]byte
	copy(key[:], prefixDomain)
	for id := range b.dirty {
		r := b.recs[id]
		adj := r.raw
		if r.decoded {
			adj = nil
			if len(r.edges) > 0 {
				b.adjBuf = encodeAdj(b.adjBuf, r.edges)
				adj = b.adjBuf
			}
		}
		b.stBuf = encodeState(b.stBuf, &r.st)
		b.valBuf = appendDomain(b.valBuf[:0], b.stBuf, adj)
		binary.BigEndian.PutUint32(key[2:], id)
		val := b.slab.copy(b.valBuf)
		b.set(b.slab.copy(key[:]), val)
		b.flushed = append(b.flushed, flushedRecord{id, val})
	}
	if b.nextID != b.baseID {
		b.set(keyNextID, binary.AppendUvarint(nil, uint64(b.nextID)))
	}
}

// apply moves what the committed batch learnt into the store's caches.
func (b *batch) apply() {
	s := b.s
	s.nextID = b.nextID
	for name, id := range b.newNames {
		s.cacheID(name, id)
	}
	for name, id := range b.found {
		s.cacheID(name, id)
	}
	for id := range b.followed {
		s.setFollowed(id)
	}
	for _, r := range b.flushed {
		s.rcache.put(r.id, r.val)
	}
}

// cacheID remembers a committed name→id pair.
func (s *Store) cacheID(name string, id uint32) {
	if s.names.put(name, id) {
		s.allIDs = false
	}
}

func (s *Store) isFollowed(id uint32) bool {
	w := int(id / 64)
	return w < len(s.followed) && s.followed[w]&(1<<(id%64)) != 0
}

func (s *Store) setFollowed(id uint32) {
	w := int(id / 64)
	if w >= len(s.followed) {
		s.followed = append(s.followed, make([]uint64, w+1-len(s.followed)+len(s.followed)/4)...)
	}
	s.followed[w] |= 1 << (id % 64)
}

// lookup finds the id of a known name: this batch's new names, those of
// the batch committing ahead, the cache, then the database. What it finds
// there goes into the cache after the commit (not now: the prefetch
// helpers read the cache meanwhile).
func (b *batch) lookup(name string) (uint32, bool, error) {
	if id, ok := b.newNames[name]; ok {
		return id, true, nil
	}
	if b.over != nil {
		if id, ok := b.over.newNames[name]; ok {
			return id, true, nil
		}
	}
	if id, ok := b.s.names.get(name); ok {
		return id, true, nil
	}
	if id, ok := b.found[name]; ok {
		return id, true, nil
	}
	if b.over != nil {
		if id, ok := b.over.found[name]; ok {
			return id, true, nil
		}
	}
	if b.s.allIDs {
		return 0, false, nil
	}
	id, ok, err := getID(b.view[0], name)
	if err != nil || !ok {
		return 0, false, err
	}
	if b.s.names != nil {
		b.found[name] = id
	}
	return id, true, nil
}

// lookupOrCreate finds name's id, creating a never-visited domain first
// seen at seen when it is unknown. name must be normalised and not removed.
func (b *batch) lookupOrCreate(name string, seen time.Time) (uint32, bool, error) {
	id, ok, err := b.lookup(name)
	if err != nil || ok {
		return id, false, err
	}
	if b.nextID == ^uint32(0) {
		return 0, false, errors.New("graph: out of domain ids")
	}
	id = b.nextID
	b.nextID++
	b.newNames[name] = id
	r := b.newRecord()
	*r = record{st: data.DomainState{ID: id, Name: name, FirstSeen: seen}, decoded: true}
	b.recs[id] = r
	b.dirty[id] = struct{}{}
	// Key and value side by side in the slab, one copy.
	b.valBuf = binary.BigEndian.AppendUint32(appendNameKey(b.valBuf[:0], name), id)
	kv := b.slab.copy(b.valBuf)
	n := len(kv) - 4
	b.set(kv[:n:n], kv[n:])
	return id, true, nil
}

// rec returns the batch's copy of a domain's record, for changing: mark
// it in b.dirty when changed.
func (b *batch) rec(id uint32) (*record, error) {
	if r, ok := b.recs[id]; ok {
		return r, nil
	}
	if r := b.overRec(id); r != nil {
		b.recs[id] = r
		return r, nil
	}
	r, err := b.s.readRecord(b.view[0], id, false, true)
	if err != nil {
		return nil, err
	}
	if r == nil {
		return nil, fmt.Errorf("%w: id %d has a name but no state", errCorrupt, id)
	}
	b.recs[id] = r
	return r, nil
}

// overRec returns a copy of the record of id the batch ahead holds, or
// nil. The copy shares the edge slice and encoded bytes, which no batch
// changes in place (new edge sets are new slices).
func (b *batch) overRec(id uint32) *record {
	if b.over == nil {
		return nil
	}
	r, ok := b.over.recs[id]
	if !ok {
		return nil
	}
	c := *r
	return &c
}

// state returns the batch's copy of a domain's state, for changing.
func (b *batch) state(id uint32) (*data.DomainState, error) {
	r, err := b.rec(id)
	if err != nil {
		return nil, err
	}
	return &r.st, nil
}

// markFollowed sets FollowedIn on a link target. When the batch rewrites
// the target's record anyway (a domain it created or visited), the mark
// rides in the record; otherwise it is a blind write of the target's f/<id>
// key, rather than a read and rewrite of its record. Either is skipped
// when the store already knows the target is followed.
func (b *batch) markFollowed(id uint32) {
	if b.s.isFollowed(id) {
		return
	}
	if _, ok := b.followed[id]; ok {
		return
	}
	if b.over != nil {
		if _, ok := b.over.followed[id]; ok {
			return
		}
	}
	b.followed[id] = struct{}{}
	if _, dirty := b.dirty[id]; dirty {
		b.recs[id].st.FollowedIn = true
		return
	}
	b.set(idKey(prefixFollow, id), nil)
}

// edges returns the batch's copy of src's out-edges, sorted by dst.
func (b *batch) edges(src uint32) ([]edge, error) {
	r, err := b.rec(src)
	if err != nil {
		return nil, err
	}
	if !r.decoded {
		if len(r.raw) > 0 {
			if r.edges, err = decodeAdj(src, r.raw, nil); err != nil {
				return nil, err
			}
		}
		r.decoded, r.raw = true, nil
	}
	return r.edges, nil
}

// setEdges replaces src's out-edges; src's record is in the batch.
func (b *batch) setEdges(src uint32, e []edge) {
	r := b.recs[src]
	r.edges, r.decoded = e, true
	b.dirty[src] = struct{}{}
}
