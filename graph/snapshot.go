package graph

import (
	"fmt"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
)

// Snapshot is a consistent, read-only view of the store at one moment: a
// Badger read transaction, so every visit is wholly in it or wholly out.
// Its methods may be called in any order, several times; a Snapshot is
// meant for one goroutine at a time.
type Snapshot struct {
	txn        *badger.Txn
	numDomains uint32
	once       sync.Once
	dir        string // the store's, to name damaged files
}

// Snapshot opens a consistent read view of the whole store. Close it
// (before closing the store).
func (s *Store) Snapshot() (sn *Snapshot, err error) {
	defer recoverBadger(&err, s.dir)
	txn := s.db.NewTransaction(false)
	n, err := readNextID(txn)
	if err != nil {
		txn.Discard()
		return nil, fmt.Errorf("graph: snapshot: %w", s.wrapRead(err))
	}
	return &Snapshot{txn: txn, numDomains: n, dir: s.dir}, nil
}

// guard is deferred by every reading method: a Badger panic or a read
// error that names damage becomes a *DamageError naming the file.
func (sn *Snapshot) guard(err *error) {
	if sn.dir == "" {
		return
	}
	if p := recover(); p != nil {
		func() {
			defer recoverBadger(err, sn.dir)
			panic(p)
		}()
		return
	}
	if d := asDamage(*err, sn.dir); d != nil {
		*err = d
	}
}

// NumDomains is one more than the largest domain id. Ids of removed
// domains stay unused, so there may be fewer domains than this.
func (sn *Snapshot) NumDomains() uint32 { return sn.numDomains }

// scan calls fn with each key and value under prefix, in key order.
func (sn *Snapshot) scan(prefix string, fn func(k, v []byte) error) (err error) {
	defer sn.guard(&err)
	// No prefetching: Badger's prefetch starts a goroutine and copies the
	// value for every item, pure overhead for values that sit in the LSM
	// tree (all but the largest edge sets); it was a third of a rebuild's
	// store-reading CPU. fn sees v only during the call and copies what it
	// keeps (the decoders do).
	it := sn.txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefix)})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		k := item.Key()
		if err := item.Value(func(v []byte) error { return fn(k, v) }); err != nil {
			return err
		}
	}
	return nil
}

// Domains calls fn for every domain in id order. fn may keep the record.
func (sn *Snapshot) Domains(fn func(*data.DomainState) error) (err error) {
	defer sn.guard(&err)
	// FollowedIn is the record's flag or an f/ key, the keys walked beside
	// the states: both are in id order.
	fit := sn.txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixFollow)})
	defer fit.Close()
	fit.Rewind()
	return sn.scan(prefixDomain, func(k, v []byte) error {
		id, err := idFromKey(k)
		if err != nil {
			return err
		}
		st := new(data.DomainState)
		if _, err := decodeDomain(id, v, st); err != nil {
			return err
		}
		for ; fit.Valid(); fit.Next() {
			fid, err := idFromKey(fit.Item().Key())
			if err != nil {
				return err
			}
			if fid >= id {
				st.FollowedIn = st.FollowedIn || fid == id
				break
			}
		}
		return fn(st)
	})
}

// Edges calls fn for every edge in (src id, dst id) order. fn may keep
// the record.
func (sn *Snapshot) Edges(fn func(*data.EdgeRecord) error) error {
	var buf []edge
	var st data.DomainState
	// Records are handed out from blocks, words from a cache: one
	// allocation per edge (or three, with a word) made the collector the
	// bottleneck of a rebuild's edge stream.
	wc := newWordCache()
	var recs []data.EdgeRecord
	return sn.scan(prefixDomain, func(k, v []byte) error {
		src, err := idFromKey(k)
		if err != nil {
			return err
		}
		adj, err := decodeDomain(src, v, &st)
		if err != nil || len(adj) == 0 {
			return err
		}
		buf, err = decodeAdjCached(src, adj, buf[:0], true, wc)
		if err != nil {
			return err
		}
		for i := range buf {
			e := &buf[i]
			if len(recs) == 0 {
				recs = make([]data.EdgeRecord, 1024)
			}
			r := &recs[0]
			recs = recs[1:]
			*r = data.EdgeRecord{
				SrcID:     src,
				DstID:     e.dst,
				FirstSeen: nanosTime(e.first),
				LastSeen:  nanosTime(e.last),
				Nofollow:  e.nofollow,
				Sitewide:  e.sitewide,
				Words:     e.words,
			}
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	})
}

// Visits calls fn for every visit-log entry in (domain id, started at)
// order. fn may keep the record.
func (sn *Snapshot) Visits(fn func(*data.VisitLogEntry) error) error {
	return sn.scan(prefixVisit, func(k, v []byte) error {
		e := new(data.VisitLogEntry)
		if err := decodeVisit(k, v, e); err != nil {
			return err
		}
		return fn(e)
	})
}

// Removed calls fn for every entry of the removal list, in name order.
func (sn *Snapshot) Removed(fn func(Removal) error) (err error) {
	defer sn.guard(&err)
	return eachRemoval(sn.txn, fn)
}

func eachRemoval(txn *badger.Txn, fn func(Removal) error) error {
	it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixRemoved)})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		name := string(item.Key()[len(prefixRemoved):])
		var r Removal
		if err := item.Value(func(v []byte) error {
			var err error
			r, err = decodeRemoval(name, v)
			return err
		}); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// Close releases the view. Closing twice is harmless.
func (sn *Snapshot) Close() error {
	sn.once.Do(sn.txn.Discard)
	return nil
}
