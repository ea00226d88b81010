package graph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
)

// batch is one write transaction. It keeps the domain states and edge sets
// it touches decoded in memory and writes each once at the end, so a batch
// of visits that share targets does not rewrite them per visit. The store's
// caches (name→id, followed bits, id counter) change only after the commit
// succeeds: a failed transaction leaves no trace, and its ids are handed
// out again, so ids stay dense.
type batch struct {
	s        *Store
	txn      *badger.Txn
	nextID   uint32
	newNames map[string]uint32
	states   map[uint32]*data.DomainState
	dirty    map[uint32]struct{}
	adj      map[uint32][]edge
	adjDirty map[uint32]struct{}
	followed []uint32
}

// write runs fn in one transaction and commits it. s.mu must be held.
func (s *Store) write(fn func(*batch) error) error {
	txn := s.db.NewTransaction(true)
	defer txn.Discard()
	b := &batch{
		s:        s,
		txn:      txn,
		nextID:   s.nextID,
		newNames: map[string]uint32{},
		states:   map[uint32]*data.DomainState{},
		dirty:    map[uint32]struct{}{},
		adj:      map[uint32][]edge{},
		adjDirty: map[uint32]struct{}{},
	}
	if err := fn(b); err != nil {
		return err
	}
	if err := b.flush(); err != nil {
		return err
	}
	if err := txn.Commit(); err != nil {
		return fmt.Errorf("graph: commit: %w", err)
	}
	b.apply()
	return nil
}

func (b *batch) set(k, v []byte) error {
	if err := b.txn.Set(k, v); err != nil {
		if errors.Is(err, badger.ErrTxnTooBig) {
			return fmt.Errorf("graph: the batch is too large for one transaction; record fewer visits at once: %w", err)
		}
		return err
	}
	return nil
}

func (b *batch) del(k []byte) error {
	if err := b.txn.Delete(k); err != nil {
		if errors.Is(err, badger.ErrTxnTooBig) {
			return fmt.Errorf("graph: the batch is too large for one transaction; record fewer visits at once: %w", err)
		}
		return err
	}
	return nil
}

// flush writes every changed state and edge set, and the id counter.
func (b *batch) flush() error {
	for id := range b.dirty {
		if err := b.set(idKey(prefixDomain, id), encodeState(nil, b.states[id])); err != nil {
			return err
		}
	}
	for id := range b.adjDirty {
		k := idKey(prefixAdj, id)
		var err error
		if edges := b.adj[id]; len(edges) == 0 {
			err = b.del(k)
		} else {
			err = b.set(k, encodeAdj(nil, edges))
		}
		if err != nil {
			return err
		}
	}
	if b.nextID != b.s.nextID {
		return b.set(keyNextID, binary.AppendUvarint(nil, uint64(b.nextID)))
	}
	return nil
}

// apply moves what the committed batch learnt into the store's caches.
func (b *batch) apply() {
	s := b.s
	s.nextID = b.nextID
	for name, id := range b.newNames {
		s.cacheID(name, id)
	}
	for _, id := range b.followed {
		s.setFollowed(id)
	}
}

// cacheID remembers a committed name→id pair. When the cache is full it
// forgets an eighth of it, picked by Go's randomised map order: cheap, and
// the names linked often come straight back.
func (s *Store) cacheID(name string, id uint32) {
	if s.ids == nil {
		return
	}
	if len(s.ids) >= s.maxIDs {
		drop := max(1, s.maxIDs/8)
		for k := range s.ids {
			delete(s.ids, k)
			if drop--; drop == 0 {
				break
			}
		}
	}
	s.ids[name] = id
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

// lookup finds the id of a known name: this batch's new names, the cache,
// then the database (caching what it finds: it is committed).
func (b *batch) lookup(name string) (uint32, bool, error) {
	if id, ok := b.newNames[name]; ok {
		return id, true, nil
	}
	if id, ok := b.s.ids[name]; ok {
		return id, true, nil
	}
	id, ok, err := getID(b.txn, name)
	if err != nil || !ok {
		return 0, false, err
	}
	b.s.cacheID(name, id)
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
	b.states[id] = &data.DomainState{ID: id, Name: name, FirstSeen: seen}
	b.dirty[id] = struct{}{}
	b.adj[id] = nil // a new domain has no edges: no need to read them
	if err := b.set(nameKey(name), binary.BigEndian.AppendUint32(nil, id)); err != nil {
		return 0, false, err
	}
	return id, true, nil
}

// state returns the batch's copy of a domain's state, for changing: mark
// it in b.dirty when changed.
func (b *batch) state(id uint32) (*data.DomainState, error) {
	if st, ok := b.states[id]; ok {
		return st, nil
	}
	st := new(data.DomainState)
	found, err := getState(b.txn, id, st)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("%w: id %d has a name but no state", errCorrupt, id)
	}
	b.states[id] = st
	return st, nil
}

// markFollowed sets FollowedIn on a link target.
func (b *batch) markFollowed(id uint32) error {
	if b.s.isFollowed(id) {
		return nil
	}
	st, err := b.state(id)
	if err != nil {
		return err
	}
	if !st.FollowedIn {
		st.FollowedIn = true
		b.dirty[id] = struct{}{}
	}
	b.followed = append(b.followed, id)
	return nil
}

// edges returns the batch's copy of src's out-edges, sorted by dst.
func (b *batch) edges(src uint32) ([]edge, error) {
	if e, ok := b.adj[src]; ok {
		return e, nil
	}
	var out []edge
	item, err := b.txn.Get(idKey(prefixAdj, src))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
	case err != nil:
		return nil, err
	default:
		err = item.Value(func(v []byte) error {
			var err error
			out, err = decodeAdj(src, v, nil)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	b.adj[src] = out
	return out, nil
}

func (b *batch) setEdges(src uint32, e []edge) {
	b.adj[src] = e
	b.adjDirty[src] = struct{}{}
}
