package graph

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
)

// ErrFenced: the store's fence (SetFence) refused a commit: whoever set it
// no longer holds the store (a fleet node that lost the shard). Nothing
// of the refused write was committed.
var ErrFenced = errors.New("graph: the store's fence refused the commit")

// SetFence makes every later commit (visits, added domains, a removal,
// the visit log's trim) call check first and refuse with ErrFenced,
// wrapping check's error, when it fails. nil removes the fence. The crawl
// fleet (package fleet) sets one per shard it holds: its Fence.Check says
// whether the holding is still current. The check runs just before each
// transaction commits, on the committing goroutine, so it must be cheap
// (the fleet's reads only local state).
func (s *Store) SetFence(check func() error) {
	if check == nil {
		s.fence.Store(nil)
		return
	}
	s.fence.Store(&check)
}

// checkFence runs the fence, if any.
func (s *Store) checkFence() error {
	if f := s.fence.Load(); f != nil {
		if err := (*f)(); err != nil {
			return fmt.Errorf("%w: %w", ErrFenced, err)
		}
	}
	return nil
}

// Metadata keys (FORMAT.md, "Keys": m/<name>) that other packages keep in
// the store beside the link data.
const (
	// MetaShard is the shard's identity in a store of several (package
	// shard): which shard of how many, routed how.
	MetaShard = "shard"
	// MetaOwner is the fencing token of the fleet holding that last
	// wrote the store (package fleet's Grant.Token), a uvarint.
	MetaOwner = "owner"
)

// SetMeta writes metadata key name (MetaShard, MetaOwner) in one
// transaction (fenced, like every commit).
func (s *Store) SetMeta(name string, val []byte) error {
	if name != MetaShard && name != MetaOwner {
		return fmt.Errorf("graph: unknown metadata key %q", name)
	}
	if err := s.lockWrite(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	if err := s.checkFence(); err != nil {
		return err
	}
	return s.db.Update(func(txn *badger.Txn) error {
		return txn.Set([]byte(prefixMeta+name), val)
	})
}

// Meta reads metadata key name; ok is false when it is not set.
func (s *Store) Meta(name string) (val []byte, ok bool, err error) {
	err = s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get([]byte(prefixMeta + name))
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		ok = true
		val, err = item.ValueCopy(nil)
		return err
	})
	return val, ok, err
}

// SetOwnerToken records the fencing token of the holding that writes the
// store from now on (MetaOwner): a node taking a shard compares it with
// the token of the shard's last writer to know whether its copy is the
// latest.
func (s *Store) SetOwnerToken(token int64) error {
	return s.SetMeta(MetaOwner, binary.AppendUvarint(nil, uint64(token)))
}

// OwnerToken reads what SetOwnerToken recorded; ok is false when nothing was.
func (s *Store) OwnerToken() (token int64, ok bool, err error) {
	v, ok, err := s.Meta(MetaOwner)
	if err != nil || !ok {
		return 0, false, err
	}
	t, n := binary.Uvarint(v)
	if n <= 0 || n != len(v) {
		return 0, false, fmt.Errorf("%w: owner token", errCorrupt)
	}
	return int64(t), true, nil
}
