package graph

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
)

// ImportDomain is one domain for Import: its whole state, out-edges by
// target name and visit log, as another store's view held them
// (NameOrder.Each). Reshard (package shard) moves domains between
// stores this way.
type ImportDomain struct {
	State  data.DomainState // ID is ignored
	Edges  []ImportEdge
	Visits []RawVisit
}

// ImportEdge is an out-edge of an ImportDomain.
type ImportEdge struct {
	Dst                 string
	FirstSeen, LastSeen time.Time
	Nofollow, Sitewide  bool
	Words               []string
	// DstFirstSeen is the target's first seen in the store the edge comes
	// from, which a target this store does not know takes (zero: the
	// edge's FirstSeen). A store whose visits were recorded out of their
	// start order (two writers) can hold an edge first seen before its
	// target: a reshard keeps the target's first seen as it was.
	DstFirstSeen time.Time
}

// Import writes domains in one transaction, all or nothing. A domain the
// store does not know takes the given state. One it knows (another shard's
// record of the same name, in a reshard) is merged as a rebuild merges the
// shards' records: the state of the record with the later visit, the
// earlier first seen, followed-in or seeded if either is; at most one of
// the records may have out-edges. Visits are added. A target the store
// does not know becomes a never-visited domain first seen at the edge's
// DstFirstSeen (or when the edge was); a followed edge marks its target
// FollowedIn. Names must be
// normalised; removed ones are refused (ErrRemoved). A batch too large for
// one transaction is refused whole (ErrBatchTooLarge): import fewer at once.
func (s *Store) Import(ds []ImportDomain) error {
	for i := range ds {
		if err := domain.Check(ds[i].State.Name); err != nil {
			return err
		}
		for _, e := range ds[i].Edges {
			if err := domain.Check(e.Dst); err != nil {
				return err
			}
		}
	}
	if err := s.lockWrite(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.write(func(b *batch) error {
		for i := range ds {
			if err := b.importDomain(&ds[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (b *batch) importDomain(d *ImportDomain) error {
	name := d.State.Name
	if _, gone := b.s.removed[name]; gone {
		return fmt.Errorf("%w: %s", ErrRemoved, name)
	}
	id, created, err := b.lookupOrCreate(name, d.State.FirstSeen)
	if err != nil {
		return err
	}
	st, err := b.state(id)
	if err != nil {
		return err
	}
	old := *st
	if created || d.State.LastVisit.After(old.LastVisit) {
		*st = d.State
		st.ID = id
	}
	st.FollowedIn = old.FollowedIn // the record's own mark; markFollowed below
	if !created {
		if !old.FirstSeen.IsZero() && (d.State.FirstSeen.IsZero() || old.FirstSeen.Before(d.State.FirstSeen)) {
			st.FirstSeen = old.FirstSeen
		} else {
			st.FirstSeen = d.State.FirstSeen
		}
		st.Seeded = old.Seeded || d.State.Seeded
	}
	b.dirty[id] = struct{}{}
	if d.State.FollowedIn {
		b.markFollowed(id)
	}
	if len(d.Edges) == 0 {
		return b.importVisits(id, d)
	}
	if have, err := b.edges(id); err != nil {
		return err
	} else if len(have) > 0 {
		return fmt.Errorf("graph: import of %s: it has out-edges already (two records with edges)", name)
	}
	edges := make([]edge, 0, len(d.Edges))
	for _, e := range d.Edges {
		if _, gone := b.s.removed[e.Dst]; gone || e.Dst == name {
			continue
		}
		seen := e.DstFirstSeen
		if seen.IsZero() {
			seen = e.FirstSeen
		}
		dst, _, err := b.lookupOrCreate(e.Dst, seen)
		if err != nil {
			return err
		}
		if !e.Nofollow {
			b.markFollowed(dst)
		}
		edges = append(edges, edge{dst: dst, first: timeNanos(e.FirstSeen), last: timeNanos(e.LastSeen),
			nofollow: e.Nofollow, sitewide: e.Sitewide, words: unionWords(nil, e.Words)})
	}
	slices.SortFunc(edges, func(x, y edge) int { return cmp.Compare(x.dst, y.dst) })
	for i := 1; i < len(edges); i++ {
		if edges[i].dst == edges[i-1].dst {
			return fmt.Errorf("graph: import of %s: two edges to one target", name)
		}
	}
	b.setEdges(id, edges)
	return b.importVisits(id, d)
}

func (b *batch) importVisits(id uint32, d *ImportDomain) error {
	for _, v := range d.Visits {
		b.set(b.slab.copy(visitKey(id, v.StartedAt)), b.slab.copy(v.Value))
	}
	return nil
}

// ImportRemovals adds entries to the removal list (another store's, in a
// reshard), keeping an entry already there. A listed name must not be
// known to the store.
func (s *Store) ImportRemovals(rs []Removal) error {
	if err := s.lockWrite(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.checkFence(); err != nil {
		return err
	}
	var added []string
	err := s.db.Update(func(txn *badger.Txn) error {
		for _, r := range rs {
			if err := domain.Check(r.Name); err != nil {
				return err
			}
			if _, ok := s.removed[r.Name]; ok {
				continue
			}
			if _, known, err := getID(txn, r.Name); err != nil || known {
				if err == nil {
					err = fmt.Errorf("graph: %s is known to the store: remove it with RemoveDomain", r.Name)
				}
				return err
			}
			if err := txn.Set(removedKey(r.Name), encodeRemoval(&r)); err != nil {
				return err
			}
			added = append(added, r.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range added {
		s.removed[n] = struct{}{}
	}
	return nil
}
