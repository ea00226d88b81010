package graph

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// Named is one domain of a view, as ByName hands it out in name order.
// Its slices are reused by the next call: copy what you keep.
type Named struct {
	// Index is the domain's position in the view's name order, from 0
	// (the order of Names).
	Index uint32
	// State is the whole state, FollowedIn included (the record's flag
	// or an f/ key); its ID is the store's own id.
	State data.DomainState
	// Edges are the out-edges, sorted by Dst.
	Edges []NamedEdge
	// Visits are the visit log's entries of the domain, oldest first.
	Visits []RawVisit
}

// NamedEdge is an out-edge whose target is given by its Index in the
// view's name order.
type NamedEdge struct {
	Dst                 uint32
	FirstSeen, LastSeen time.Time
	Nofollow, Sitewide  bool
	Words               []string
}

// RawVisit is one visit-log entry as the store keeps it: the start time
// from its key and its value in the store's encoding (FORMAT.md, "Visit"),
// which DecodeVisit reads.
type RawVisit struct {
	StartedAt time.Time
	Value     []byte
}

// ByName calls fn for every domain of the view in name order (byte order
// of the names), each with its state, out-edges and visits. It is how a
// shard is exported (rebuild.ExportPart) and resharded (shard.Reshard):
// the store's ids are insertion order, so a consumer that wants names in
// order (a k-way merge of shards) gets them without a sort of its own.
//
// Names on the removal list are left out, and edges to them dropped (a
// removal an earlier process was cut off in: Open finishes it). Memory:
// the view's domain records and visits are read into memory once (about
// the size of their values in the store, a few bytes an edge) plus 16
// bytes a domain; a shard's export costs its own size, not the whole
// store's. ByName is LoadByName and one NameOrder.Each of every field.
func (sn *Snapshot) ByName(fn func(*Named) error) error {
	no, err := sn.LoadByName()
	if err != nil {
		return err
	}
	return no.Each(NamedAll, fn)
}

// NameOrder is a view's domains read into memory for ByName's walk in
// name order, which Each repeats as often as needed: a local rebuild
// reads each shard this way once and walks it once per merged stream,
// with no export to files between. It holds copies of the view's values
// (the memory ByName costs), not the view itself: the view may be closed
// once it is loaded. Each may run in several goroutines at once.
type NameOrder struct {
	ix         *nameIndex
	recs       *valueArena
	followed   []uint64
	visits     []visitRef
	firstVisit []int32
	varena     *valueArena
	statesOnly bool // KeepStates let the edges and visits go: recs hold states
}

// errStatesOnly: a walk of edges or visits after KeepStates.
var errStatesOnly = errors.New("graph: the loaded view kept its states only: its edges and visits were let go")

// KeepStates lets go of the loaded edges and visits (most of the memory a
// loaded view takes), keeping the states for later walks of NamedState
// and NamedName: a rebuild's last pass over the domains needs no more.
// The states are kept in name order, so that such a walk reads them in
// sequence. Not while a walk runs.
func (no *NameOrder) KeepStates() error {
	if no.statesOnly {
		return nil
	}
	recs := newValueArena(uint32(len(no.recs.byID)))
	for _, id := range no.ix.order {
		val := no.recs.get(id)
		if val == nil {
			continue // Each says so
		}
		state, _, err := splitDomain(id, val)
		if err != nil {
			return err
		}
		recs.put(id, state)
	}
	no.recs, no.statesOnly = recs, true
	no.visits, no.firstVisit, no.varena = nil, nil, nil
	return nil
}

// NamedFields says what Each decodes of each domain; the rest of Named is
// left empty (Index is always set).
type NamedFields uint8

const (
	NamedState  NamedFields = 1 << iota // State
	NamedEdges                          // Edges, with their words
	NamedVisits                         // Visits
	NamedName                           // State.Name alone (the rest of State left zero; from the name index, not the record)
	NamedAll    = NamedState | NamedEdges | NamedVisits
)

// LoadByName reads the view for ByName's walk: the name index, the domain
// records, the followed flags and the visit log.
func (sn *Snapshot) LoadByName() (_ *NameOrder, err error) {
	defer sn.guard(&err)
	ix, err := sn.nameIndex()
	if err != nil {
		return nil, err
	}
	n := sn.numDomains
	// The records: one scan of d/, values kept in an arena by id.
	recs := newValueArena(n)
	err = sn.scan(prefixDomain, func(k, v []byte) error {
		id, err := idFromKey(k)
		if err != nil {
			return err
		}
		if id >= n {
			return fmt.Errorf("%w: record of id %d, beyond the id counter %d", errCorrupt, id, n)
		}
		recs.put(id, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	followed := make([]uint64, (n+63)/64)
	err = sn.scan(prefixFollow, func(k, _ []byte) error {
		id, err := idFromKey(k)
		if err != nil {
			return err
		}
		if id < n {
			followed[id/64] |= 1 << (id % 64)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The visit log, in (id, start) order: each id's entries are
	// contiguous, so an id needs only the index of its first.
	var visits []visitRef
	firstVisit := make([]int32, n)
	for i := range firstVisit {
		firstVisit[i] = -1
	}
	varena := newValueArena(0)
	err = sn.scan(prefixVisit, func(k, v []byte) error {
		if len(k) != len(prefixVisit)+12 {
			return fmt.Errorf("%w: visit key %q", errCorrupt, k)
		}
		id := binary.BigEndian.Uint32(k[2:6])
		if id >= n || ix.rank[id] == noRank {
			return nil // a removed domain's, not yet purged
		}
		if firstVisit[id] < 0 {
			firstVisit[id] = int32(len(visits))
		}
		if len(visits) == cap(visits) {
			// Doubled: append's growth by a quarter copies the log's
			// index again and again.
			visits = slices.Grow(visits, max(1024, len(visits)))
		}
		visits = append(visits, visitRef{id: id, started: int64(binary.BigEndian.Uint64(k[6:])), at: varena.add(v)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &NameOrder{ix: ix, recs: recs, followed: followed, visits: visits, firstVisit: firstVisit, varena: varena}, nil
}

// Len is the number of names Each walks.
func (no *NameOrder) Len() int { return len(no.ix.order) }

// Names are the names Each walks, in its order (shared: not to be
// changed).
func (no *NameOrder) Names() []string { return no.ix.names }

// Each calls fn for every domain in name order, as ByName does, decoding
// only fields of each: each field costs a walk over the records, and a
// rebuild walks them several times. The names' order is checked where
// they are decoded (NamedState, NamedName).
func (no *NameOrder) Each(fields NamedFields, fn func(*Named) error) error {
	ix := no.ix
	n := uint32(len(ix.rank))
	if no.statesOnly && fields&(NamedEdges|NamedVisits) != 0 {
		return errStatesOnly
	}
	nd := &Named{}
	wc := newWordCache()
	var buf []edge
	var prev string
	for i, id := range ix.order {
		nd.Index = uint32(i)
		nd.Edges = nd.Edges[:0]
		if fields&(NamedState|NamedEdges) == 0 && fields&NamedName != 0 {
			nd.State = data.DomainState{ID: id, Name: ix.names[i]}
		}
		if fields&(NamedState|NamedEdges) != 0 {
			val := no.recs.get(id)
			if val == nil {
				return fmt.Errorf("%w: domain id %d has a name but no record", errCorrupt, id)
			}
			state, adj := val, []byte(nil)
			if !no.statesOnly {
				var err error
				if state, adj, err = splitDomain(id, val); err != nil {
					return err
				}
			}
			switch {
			case fields&NamedState != 0:
				if err := decodeState(id, state, &nd.State); err != nil {
					return err
				}
				nd.State.FollowedIn = nd.State.FollowedIn || no.followed[id/64]&(1<<(id%64)) != 0
				if nd.State.Name != ix.names[i] {
					return fmt.Errorf("%w: the record of id %d names %q, its name key %q", errCorrupt, id, nd.State.Name, ix.names[i])
				}
				if i > 0 && nd.State.Name <= prev {
					return fmt.Errorf("%w: the record of id %d names %q, out of the name index's order (after %q)", errCorrupt, id, nd.State.Name, prev)
				}
				prev = nd.State.Name
			case fields&NamedName != 0:
				nd.State = data.DomainState{ID: id, Name: ix.names[i]}
			}
			if fields&NamedEdges != 0 && len(adj) > 0 {
				var err error
				if buf, err = decodeAdjCached(id, adj, buf[:0], true, wc); err != nil {
					return err
				}
				for _, e := range buf {
					r := noRank
					if e.dst < n {
						r = ix.rank[e.dst]
					}
					if r == noRank {
						if ix.removed[e.dst] {
							continue
						}
						return fmt.Errorf("%w: an edge of id %d names id %d, which has no name", errCorrupt, id, e.dst)
					}
					nd.Edges = append(nd.Edges, NamedEdge{Dst: r, FirstSeen: nanosTime(e.first), LastSeen: nanosTime(e.last),
						Nofollow: e.nofollow, Sitewide: e.sitewide, Words: e.words})
				}
				slices.SortFunc(nd.Edges, func(a, b NamedEdge) int { return cmp.Compare(a.Dst, b.Dst) })
			}
		}
		nd.Visits = nd.Visits[:0]
		if fields&NamedVisits != 0 && no.firstVisit[id] >= 0 {
			for j := no.firstVisit[id]; int(j) < len(no.visits) && no.visits[j].id == id; j++ {
				nd.Visits = append(nd.Visits, RawVisit{StartedAt: nanosTime(no.visits[j].started), Value: no.varena.value(no.visits[j].at)})
			}
		}
		if err := fn(nd); err != nil {
			return err
		}
	}
	return nil
}

// Names returns the view's names in name order, as ByName numbers them.
func (sn *Snapshot) Names() (_ []string, err error) {
	defer sn.guard(&err)
	var out []string
	err = sn.eachName(func(name []byte, _ uint32, removed bool) error {
		if !removed {
			out = append(out, string(name))
		}
		return nil
	})
	return out, err
}

// noRank marks an id with no name in the view (unused, or removed).
const noRank = ^uint32(0)

// nameIndex is the view's name order: the ids in name order and each
// id's position in it.
type nameIndex struct {
	names   []string // in name order
	order   []uint32
	rank    []uint32 // by id; noRank where none
	removed map[uint32]bool
}

func (sn *Snapshot) nameIndex() (*nameIndex, error) {
	n := sn.numDomains
	ix := &nameIndex{rank: make([]uint32, n), removed: map[uint32]bool{},
		order: make([]uint32, 0, n), names: make([]string, 0, n)} // n: as many as the ids, the most there can be
	for i := range ix.rank {
		ix.rank[i] = noRank
	}
	err := sn.eachName(func(name []byte, id uint32, removed bool) error {
		if id >= n {
			return fmt.Errorf("%w: name %q has id %d, beyond the id counter %d", errCorrupt, name, id, n)
		}
		if removed {
			ix.removed[id] = true
			return nil
		}
		if ix.rank[id] != noRank {
			return fmt.Errorf("%w: id %d has two names (%q is one)", errCorrupt, id, name)
		}
		ix.rank[id] = uint32(len(ix.order))
		ix.order = append(ix.order, id)
		ix.names = append(ix.names, string(name))
		return nil
	})
	return ix, err
}

// eachName calls fn with every n/ entry in name order, saying whether the
// name is on the removal list.
func (sn *Snapshot) eachName(fn func(name []byte, id uint32, removed bool) error) error {
	removed := map[string]bool{}
	if err := eachRemoval(sn.txn, func(r Removal) error { removed[r.Name] = true; return nil }); err != nil {
		return err
	}
	return sn.scan(prefixName, func(k, v []byte) error {
		name := k[len(prefixName):]
		if len(v) != 4 {
			return fmt.Errorf("%w: id of name %q", errCorrupt, name)
		}
		return fn(name, binary.BigEndian.Uint32(v), removed[string(name)])
	})
}

// visitRef is one visit of ByName's buffer.
type visitRef struct {
	id      uint32
	started int64
	at      valueRef
}

// valueArena keeps copies of many small values in large blocks rather
// than an allocation each (millions of records), optionally indexed by id.
type valueArena struct {
	blocks [][]byte
	byID   []valueRef
}

// valueRef is a value's place in an arena: block, offset and length.
type valueRef struct {
	block, off, len uint32
}

// An arena's blocks start small and double up to arenaBlock, so that a
// small store's view costs little.
const (
	arenaFirstBlock = 64 << 10
	arenaBlock      = 16 << 20
)

func newValueArena(ids uint32) *valueArena {
	return &valueArena{byID: make([]valueRef, ids)}
}

func (a *valueArena) add(v []byte) valueRef {
	n := len(a.blocks)
	if n == 0 || len(v) > cap(a.blocks[n-1])-len(a.blocks[n-1]) {
		size := arenaFirstBlock
		if n > 0 {
			size = min(2*cap(a.blocks[n-1]), arenaBlock)
		}
		a.blocks = append(a.blocks, make([]byte, 0, max(size, len(v))))
		n++
	}
	b := a.blocks[n-1]
	off := len(b)
	a.blocks[n-1] = append(b, v...)
	// len+1: a zero ref means "none" in byID.
	return valueRef{block: uint32(n - 1), off: uint32(off), len: uint32(len(v)) + 1}
}

func (a *valueArena) put(id uint32, v []byte) { a.byID[id] = a.add(v) }

func (a *valueArena) value(r valueRef) []byte {
	if r.len == 0 {
		return nil
	}
	return a.blocks[r.block][r.off : r.off+r.len-1 : r.off+r.len-1]
}

func (a *valueArena) get(id uint32) []byte { return a.value(a.byID[id]) }

// DecodeVisit reads a RawVisit into a visit-log entry of domain id.
func DecodeVisit(id uint32, v RawVisit) (data.VisitLogEntry, error) {
	var e data.VisitLogEntry
	key := visitKey(id, v.StartedAt)
	err := decodeVisit(key, v.Value, &e)
	return e, err
}

// EncodeState appends a domain's state in the store's encoding
// (FORMAT.md, "Domain record": the state, FollowedIn as the record's
// flag) to buf: how a shard's export carries states (rebuild.ExportPart).
func EncodeState(buf []byte, st *data.DomainState) []byte {
	return append(buf, encodeState(nil, st)...)
}

// DecodeState reads what EncodeState wrote, as the state of domain id.
func DecodeState(id uint32, b []byte) (data.DomainState, error) {
	var st data.DomainState
	err := decodeState(id, b, &st)
	return st, err
}

// splitDomain cuts a domain record into its state and its adjacency
// (decodeDomain without decoding the state).
func splitDomain(id uint32, b []byte) (state, adj []byte, err error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, nil, fmt.Errorf("%w: domain record of id %d", errCorrupt, id)
	}
	return b[k : k+int(n)], b[k+int(n):], nil
}
