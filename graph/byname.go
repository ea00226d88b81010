package graph

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// Named is one domain of a view, as NameOrder.Each hands it out in name
// order. Its slices (the visits' values too) are reused by the next call:
// copy what you keep.
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

// Names returns the view's names in name order, as NameOrder.Each numbers
// them (from the name keys alone, with no record read).
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
// id's position in it. The names are kept back to back in one block
// rather than as strings: a third of the memory (a string's header and
// its allocation's rounding cost more than a domain's name), and nothing
// for the collector to scan (millions of names a shard).
type nameIndex struct {
	blob    []byte   // the names in name order, back to back
	ends    []uint32 // where each name ends in blob
	order   []uint32
	rank    []uint32 // by id; noRank where none
	removed map[uint32]bool
}

// name is the name of rank i (a slice of the index's block).
func (ix *nameIndex) name(i int) []byte {
	var start uint32
	if i > 0 {
		start = ix.ends[i-1]
	}
	return ix.blob[start:ix.ends[i]:ix.ends[i]]
}

func (sn *Snapshot) nameIndex() (*nameIndex, error) {
	n := sn.numDomains
	ix := &nameIndex{rank: make([]uint32, n), removed: map[uint32]bool{},
		order: make([]uint32, 0, n), ends: make([]uint32, 0, n)} // n: as many as the ids, the most there can be
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
		if len(ix.blob)+len(name) > math.MaxUint32 {
			return fmt.Errorf("graph: more than 4 GiB of names in one store: reshard it into more shards")
		}
		ix.blob = append(ix.blob, name...)
		ix.ends = append(ix.ends, uint32(len(ix.blob)))
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
