package graph

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// The visit log's retention. A domain's state (last visit, outcome,
// failures, retry time) is its record; the visit log is history, one entry
// per visit, and would grow by a visit a visit for ever. The store keeps
// a domain's visits that started within Options.VisitHistory (90 days by
// default) of its latest visit, and always the latest; the upkeep drops
// older ones (every GC pass and on Close), so that the store grows with the
// number of domains, not with the number of crawls: a domain revisited
// every 10 days keeps about nine visits, one revisited yearly keeps one.
// The window is measured from the domain's own latest visit, not from the
// clock, so a store left alone for months loses nothing and the rule
// needs no clock. Each snapshot's
// visits.parquet carries what the store kept when it was taken: an
// operator who wants all history keeps the snapshots' visit files
// (DESIGN.md, README "Keeping history").
//
// Trimming is off the hot path on purpose: deciding at each visit which
// entry falls out would need a prefix scan (or a list in the record) per
// visit; one keys-only scan of v/ per pass costs about a second per few
// million entries and touches nothing the crawl reads.

// DefaultVisitHistory is how far back from a domain's latest visit the
// visit log keeps its visits.
const DefaultVisitHistory = 90 * 24 * time.Hour

// trimChunk is how many deletes one transaction carries: well inside
// Badger's transaction limit, and short enough that a trim holding the
// writer lock delays a crawl's batch only briefly. A variable for tests.
var trimChunk = 10_000

// visitHistory resolves Options.VisitHistory: 0 the default, negative
// keep all (0).
func visitHistory(o Options) time.Duration {
	switch {
	case o.VisitHistory == 0:
		return DefaultVisitHistory
	case o.VisitHistory < 0:
		return 0
	}
	return o.VisitHistory
}

// trimVisits deletes every visit-log entry that started more than
// s.visitHistory before its domain's latest, returning how many it deleted. locked says the
// caller holds s.mu (Close does); otherwise each chunk of deletes takes the
// writer lock like any write. Entries recorded while it runs are newer than
// anything it deletes, so what is kept only grows meanwhile.
func (s *Store) trimVisits(locked bool) (int, error) {
	if s.visitHistory <= 0 || s.ro {
		return 0, nil
	}
	// A chunk at a time (scan, then delete), so that memory stays small
	// however much history a store carries when it first meets the rule.
	done := 0
	from := []byte(prefixVisit)
	for from != nil {
		old, next, err := s.oldVisits(from)
		if err != nil {
			return done, fmt.Errorf("graph: trim visit log: %w", err)
		}
		for len(old) > 0 {
			chunk := old[:min(trimChunk, len(old))]
			old = old[len(chunk):]
			if err := s.deleteKeys(chunk, locked); err != nil {
				return done, fmt.Errorf("graph: trim visit log: %w", err)
			}
			done += len(chunk)
		}
		from = next
	}
	return done, nil
}

// oldVisits scans the visit log from key from, domain by domain, and
// returns the keys to drop: about trimChunk of them (a domain is never
// split), and the key to go on from (nil at the end of the log).
func (s *Store) oldVisits(from []byte) (old [][]byte, next []byte, err error) {
	window := uint64(s.visitHistory)
	var group [][]byte // the current domain's keys, oldest first
	flush := func() {
		if len(group) >= 2 {
			// The key's last 8 bytes are the start, Unix nanoseconds.
			latest := binary.BigEndian.Uint64(group[len(group)-1][len(prefixVisit)+4:])
			for _, k := range group[:len(group)-1] {
				if latest-binary.BigEndian.Uint64(k[len(prefixVisit)+4:]) > window {
					old = append(old, k)
				}
			}
		}
		group = group[:0]
	}
	err = s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixVisit), PrefetchValues: false})
		defer it.Close()
		for it.Seek(from); it.Valid(); it.Next() {
			k := it.Item().KeyCopy(nil)
			if len(k) != len(prefixVisit)+12 {
				return fmt.Errorf("%w: visit key of %d bytes", errCorrupt, len(k))
			}
			if len(group) > 0 && !bytes.Equal(group[0][:len(prefixVisit)+4], k[:len(prefixVisit)+4]) {
				flush()
				if len(old) >= trimChunk {
					next = k
					return nil
				}
			}
			group = append(group, k)
		}
		flush()
		return nil
	})
	return old, next, err
}

// deleteKeys deletes keys in one write transaction (the store's own).
func (s *Store) deleteKeys(keys [][]byte, locked bool) error {
	if !locked {
		if err := s.lockWrite(); err != nil {
			return err
		}
		defer s.mu.Unlock()
	}
	return s.write(func(b *batch) error {
		for _, k := range keys {
			b.del(k)
		}
		return nil
	})
}
