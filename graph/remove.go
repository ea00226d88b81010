package graph

import (
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
)

// RemoveDomain puts name on the removal list and deletes everything the
// store knows of it: its state, its visit log, its out-edges and the edges
// into it. From then on links to it are dropped and visits of it refused
// (ErrRemoved). name must be a registrable domain as domain.Normalize gives it.
// Removing a domain twice keeps the first entry and returns nil.
//
// Edges into the domain are found by reading every edge set: removal is
// rare (a site owner's verified request), while a reverse index would cost
// a write per edge on every visit.
//
// A removal too large for one transaction is done in several. Its first
// writes the removal list entry (so the domain is gone for every later
// reader of links) and the last deletes the name key; a removal cut off in
// between is finished by the next Open, since a name key beside a removal
// list entry can only mean that.
func (s *Store) RemoveDomain(name, reason, proof string, at time.Time) error {
	if err := domain.Check(name); err != nil {
		return err
	}
	if err := s.lockWrite(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.checkFence(); err != nil {
		return err
	}
	if _, gone := s.removed[name]; !gone {
		r := Removal{Name: name, Reason: reason, Proof: proof, At: at}
		err := s.db.Update(func(txn *badger.Txn) error {
			return txn.Set(removedKey(name), encodeRemoval(&r))
		})
		if err != nil {
			return fmt.Errorf("graph: remove %s: %w", name, err)
		}
		s.removed[name] = struct{}{}
	}
	s.names.delete(name)
	// The purge rewrites the records of the domains that linked to it.
	s.rcache.reset()
	if err := s.purge(name); err != nil {
		return fmt.Errorf("graph: remove %s: %w", name, err)
	}
	return nil
}

// finishRemovals completes removals an earlier process was cut off in.
func (s *Store) finishRemovals() error {
	for name := range s.removed {
		if err := s.purge(name); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// purge deletes what the store holds of a removed name, if anything.
// s.mu is held (or the store is not yet shared).
func (s *Store) purge(name string) error {
	var id uint32
	var known bool
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		id, known, err = getID(txn, name)
		return err
	})
	if err != nil || !known {
		return err
	}
	w := newChunkWriter(s.db)
	defer w.discard()

	// Edges into it: rewrite every edge set that names it.
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{PrefetchValues: true, Prefix: []byte(prefixDomain)})
		defer it.Close()
		var buf []edge
		var st data.DomainState
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			src, err := idFromKey(item.Key())
			if err != nil {
				return err
			}
			if src == id {
				continue
			}
			var adj []byte
			if err := item.Value(func(v []byte) error {
				if adj, err = decodeDomain(src, v, &st); err != nil || len(adj) == 0 {
					return err
				}
				buf, err = decodeAdj(src, adj, buf[:0])
				return err
			}); err != nil {
				return err
			}
			if len(adj) == 0 {
				continue
			}
			kept := buf[:0]
			for _, e := range buf {
				if e.dst != id {
					kept = append(kept, e)
				}
			}
			if len(kept) == len(buf) {
				continue
			}
			var raw []byte
			if len(kept) > 0 {
				raw = encodeAdj(nil, kept)
			}
			if err := w.set(item.KeyCopy(nil), encodeDomain(nil, &st, raw)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Its visit log.
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: idKey(prefixVisit, id)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := w.delete(it.Item().KeyCopy(nil)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// Its followed mark, its record (state and out-edges), then the name key that marks the removal
	// unfinished.
	for _, k := range [][]byte{idKey(prefixFollow, id), idKey(prefixDomain, id), nameKey(name)} {
		if err := w.delete(k); err != nil {
			return err
		}
	}
	return w.commit()
}

// chunkWriter writes in as many transactions as it takes, committing one
// when Badger says it is full. Only for work that may be split: removal.
type chunkWriter struct {
	db  *badger.DB
	txn *badger.Txn
}

func newChunkWriter(db *badger.DB) *chunkWriter {
	return &chunkWriter{db: db, txn: db.NewTransaction(true)}
}

func (w *chunkWriter) do(op func(*badger.Txn) error) error {
	err := op(w.txn)
	if !errors.Is(err, badger.ErrTxnTooBig) {
		return err
	}
	if err := w.commit(); err != nil {
		return err
	}
	w.txn = w.db.NewTransaction(true)
	return op(w.txn)
}

func (w *chunkWriter) set(k, v []byte) error {
	return w.do(func(txn *badger.Txn) error { return txn.Set(k, v) })
}

func (w *chunkWriter) delete(k []byte) error {
	return w.do(func(txn *badger.Txn) error { return txn.Delete(k) })
}

func (w *chunkWriter) commit() error { return w.txn.Commit() }

func (w *chunkWriter) discard() { w.txn.Discard() }
