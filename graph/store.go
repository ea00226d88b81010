// Package graph is the link store: domain ids, edges, link words, per-domain
// crawl state and the visit log, kept in an embedded Badger database.
// See FORMAT.md for the key layout.
package graph

import (
	"errors"
	"log/slog"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

var errNotImplemented = errors.New("graph: not implemented yet")

// Options configure Open.
type Options struct {
	Logger   *slog.Logger // nil: discard
	InMemory bool         // tests: no files
	ReadOnly bool
}

// Store is an open link store. Its methods are safe for concurrent use.
type Store struct{}

// Open opens (creating if needed) the store in dir.
func Open(dir string, opts Options) (*Store, error) { return nil, errNotImplemented }

// Close flushes and closes the store.
func (s *Store) Close() error { return errNotImplemented }

// AddDomains records names (registrable domains) as known, never-visited
// domains first seen at seen; known ones are left as they are, except that
// seeded marks them as seeds.
func (s *Store) AddDomains(names []string, seen time.Time, seeded bool) error {
	return errNotImplemented
}

// RecordVisit writes one visit, all or nothing.
func (s *Store) RecordVisit(v *data.VisitResult) error { return errNotImplemented }

// RecordVisits writes several visits in one transaction, all or nothing.
func (s *Store) RecordVisits(vs []*data.VisitResult) error { return errNotImplemented }

// Domain returns the state of one domain.
func (s *Store) Domain(name string) (data.DomainState, bool, error) {
	return data.DomainState{}, false, errNotImplemented
}

// Snapshot opens a consistent read view of the whole store. Close it.
func (s *Store) Snapshot() (*Snapshot, error) { return nil, errNotImplemented }

// Snapshot is a consistent, read-only view of the store at one moment.
type Snapshot struct{}

// NumDomains is one more than the largest domain id.
func (sn *Snapshot) NumDomains() uint32 { return 0 }

// Domains calls fn for every domain in id order.
func (sn *Snapshot) Domains(fn func(*data.DomainState) error) error { return errNotImplemented }

// Edges calls fn for every edge in (src id, dst id) order.
func (sn *Snapshot) Edges(fn func(*data.EdgeRecord) error) error { return errNotImplemented }

// Visits calls fn for every visit-log entry in (domain id, started at) order.
func (sn *Snapshot) Visits(fn func(*data.VisitLogEntry) error) error { return errNotImplemented }

// Close releases the view.
func (sn *Snapshot) Close() error { return nil }
