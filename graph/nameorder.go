package graph

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/internal/kway"
	"github.com/mapthenet/mapthenet/internal/runfile"
)

// NameOrder is a view's domains sorted into name order, which Each walks
// as often as needed: the store's ids are insertion order, so a consumer
// that wants names in order (a k-way merge of shards: a shard's export,
// rebuild.ExportPart, a local rebuild, a reshard) gets them without a sort
// of its own. A local rebuild sorts each shard so once and walks it once
// per merged stream, with no export to files between. It holds copies of the view's values, not the view itself: the
// view may be closed once it is loaded. Each may run in several
// goroutines at once. Close it when done.
//
// The store keeps a domain's record (state and out-edges) and its visits
// under its id, in insertion order, so the sort is a sort of the whole
// view's values. Held in memory (Spill without a Dir), it costs about
// their size. With a Spill directory it is an external merge
// sort and memory stays bounded whatever the view's size: the values are
// read in id order into chunks of at most Spill.ChunkBytes, each sorted by
// name and written to a run file, and Each merges the runs (a view that
// fits one chunk stays in memory, with no file).
type NameOrder struct {
	ix       *nameIndex
	followed []uint64
	// mem is the view's entries when they fit one chunk (or nothing
	// spills), sorted; nil when they are in runs.
	mem  *chunk
	runs []string // run files, each sorted by name
	// stateRecs: mem's records are states alone (KeepStates).
	stateRecs  bool
	statesOnly bool // KeepStates: edges and visits are refused
	noNames    bool // DropNames: the index's names were let go
}

// Spill lets LoadByName sort a view larger than memory through files.
type Spill struct {
	// Dir is a scratch directory for the sorted runs, which Close removes
	// (and whoever owns Dir removes what a killed process left). "":
	// everything in memory.
	Dir string
	// ChunkBytes bounds the values held in memory while sorting: the
	// size of a run. 0: DefaultSpillChunk.
	ChunkBytes int
}

// DefaultSpillChunk is a spilled sort's chunk: with the few hundred KiB
// that a run's reader holds, a view of a few GiB costs a few MiB to walk.
const DefaultSpillChunk = 64 << 20

// errStatesOnly: a walk of edges or visits after KeepStates.
var errStatesOnly = errors.New("graph: the loaded view kept its states only: its edges and visits were let go")

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

// An entry is one domain as a NameOrder keeps it, in memory and in run
// files alike (hand-written: a fixed framing of bytes the store already
// encoded, which no serialisation library would make smaller or faster):
//
//	length  uint32, big-endian: the bytes after it
//	rank    uint32, big-endian: the domain's position in name order
//	id      uint32, big-endian: its id in the store
//	record  uvarint length, then the d/ value (or its state alone after KeepStates)
//	visits  to the end: each started (int64, big-endian nanoseconds), uvarint length, the v/ value
const entryHeader = 12

// chunk is entries in memory, and their order by rank.
type chunk struct {
	arena *valueArena
	refs  []entryRef
	bytes int
}

type entryRef struct {
	rank uint32
	at   valueRef
}

func newChunk() *chunk { return &chunk{arena: newValueArena(0)} }

func (c *chunk) add(rank uint32, e []byte) {
	c.refs = append(c.refs, entryRef{rank: rank, at: c.arena.add(e)})
	c.bytes += len(e)
}

func (c *chunk) sort() {
	slices.SortFunc(c.refs, func(a, b entryRef) int { return cmp.Compare(a.rank, b.rank) })
}

// LoadByName reads and sorts the view into name order for Each: the name
// index, the followed flags, and each domain's record with its visits, as
// sp says (in memory, or spilled to sorted runs).
//
// Names on the removal list are left out, and edges to them dropped (a
// removal an earlier process was cut off in: Open finishes it). Memory:
// the name index (the names, and about 12 bytes a domain) and the
// followed flags, plus the records and visits (about the size of their
// values in the store, a few bytes an edge) in memory, or a chunk of them
// with a Spill directory.
func (sn *Snapshot) LoadByName(sp Spill) (_ *NameOrder, err error) {
	defer sn.guard(&err)
	ix, err := sn.nameIndex()
	if err != nil {
		return nil, err
	}
	n := sn.numDomains
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
	no := &NameOrder{ix: ix, followed: followed}
	defer func() {
		if err != nil {
			no.Close()
		}
	}()
	limit := sp.ChunkBytes
	if limit <= 0 {
		limit = DefaultSpillChunk
	}
	// The records and the visit log side by side, both in id order: an
	// entry is a record and the visits of its id. Visits of an id with no
	// record, or with no name (a removed domain's, not yet purged), are
	// left out, as its record is.
	vit := sn.txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixVisit)})
	defer vit.Close()
	vit.Rewind()
	ch := newChunk()
	var e []byte
	err = sn.scan(prefixDomain, func(k, v []byte) error {
		id, err := idFromKey(k)
		if err != nil {
			return err
		}
		if id >= n {
			return fmt.Errorf("%w: record of id %d, beyond the id counter %d", errCorrupt, id, n)
		}
		rank := ix.rank[id]
		e = e[:0]
		if rank != noRank {
			e = binary.BigEndian.AppendUint32(e, 0) // its length, set below
			e = binary.BigEndian.AppendUint32(e, rank)
			e = binary.BigEndian.AppendUint32(e, id)
			e = binary.AppendUvarint(e, uint64(len(v)))
			e = append(e, v...)
		}
		for ; vit.Valid(); vit.Next() {
			item := vit.Item()
			vk := item.Key()
			if len(vk) != len(prefixVisit)+12 {
				return fmt.Errorf("%w: visit key %q", errCorrupt, vk)
			}
			vid := binary.BigEndian.Uint32(vk[2:6])
			if vid > id {
				break
			}
			if vid < id || rank == noRank {
				continue
			}
			e = append(e, vk[6:]...)
			if err := item.Value(func(val []byte) error {
				e = binary.AppendUvarint(e, uint64(len(val)))
				e = append(e, val...)
				return nil
			}); err != nil {
				return err
			}
		}
		if rank == noRank {
			return nil
		}
		binary.BigEndian.PutUint32(e, uint32(len(e)-4))
		ch.add(rank, e)
		if sp.Dir != "" && ch.bytes >= limit {
			if err := no.spill(ch, sp.Dir); err != nil {
				return err
			}
			ch = newChunk()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(no.runs) > 0 && len(ch.refs) > 0 {
		err = no.spill(ch, sp.Dir)
	} else if len(no.runs) == 0 {
		ch.sort()
		no.mem = ch
	}
	return no, err
}

// spill writes c, sorted, as a run file in dir. The runs are scratch,
// read back by this process only: not synced (a crash loses the rebuild,
// which is started again), compressed with S2 (fast; a third to a half of
// the bytes to write and read back).
func (no *NameOrder) spill(c *chunk, dir string) error {
	c.sort()
	w, err := runfile.Create(dir, "names-*.run")
	if err != nil {
		return fmt.Errorf("graph: sorting a view by name: %w", err)
	}
	no.runs = append(no.runs, w.Name())
	for _, r := range c.refs {
		if _, err := w.Write(c.arena.value(r.at)); err != nil {
			w.Close()
			return fmt.Errorf("graph: sorting a view by name: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("graph: sorting a view by name: %w", err)
	}
	return nil
}

// Close removes the view's run files, if it has any.
func (no *NameOrder) Close() error {
	var first error
	for _, r := range no.runs {
		if err := os.Remove(r); err != nil && first == nil && !errors.Is(err, os.ErrNotExist) {
			first = err
		}
	}
	no.runs = nil
	no.mem = nil
	return first
}

// KeepStates lets go of the loaded edges and visits, keeping the states
// for later walks of NamedState and NamedName: a rebuild's last pass over
// the domains needs no more. In memory that is most of what the view
// takes; a spilled view holds nothing to let go, and only refuses edges
// and visits from now on, as the other does. Not while a walk runs.
func (no *NameOrder) KeepStates() error {
	if no.statesOnly {
		return nil
	}
	if no.mem != nil {
		states := newChunk()
		var e []byte
		for _, r := range no.mem.refs {
			ent, err := parseEntry(no.mem.arena.value(r.at))
			if err != nil {
				return err
			}
			state, _, err := splitDomain(ent.id, ent.rec)
			if err != nil {
				return err
			}
			e = binary.BigEndian.AppendUint32(e[:0], 0)
			e = binary.BigEndian.AppendUint32(e, ent.rank)
			e = binary.BigEndian.AppendUint32(e, ent.id)
			e = binary.AppendUvarint(e, uint64(len(state)))
			e = append(e, state...)
			binary.BigEndian.PutUint32(e, uint32(len(e)-4))
			states.add(ent.rank, e) // in rank order already
		}
		no.mem, no.stateRecs = states, true
	}
	no.statesOnly = true
	return nil
}

// DropNames lets go of the name index's names (its order and the ids'
// ranks stay), about 18 bytes a domain: for a caller that has taken them
// (Names, or a walk of NamedName) and keeps them itself, as a rebuild's
// merge does. Walks of NamedName and Names are refused from now on, and a
// walk of NamedState no longer checks each state's name against its name
// key (the caller checks it against its own copy; the order of the
// states' names is still checked). Not while a walk runs.
func (no *NameOrder) DropNames() {
	no.ix.blob, no.ix.ends, no.noNames = nil, nil, true
}

// errNoNames: a walk of the names after DropNames.
var errNoNames = errors.New("graph: the loaded view let its names go")

// Len is the number of names Each walks.
func (no *NameOrder) Len() int { return len(no.ix.order) }

// Names are the names Each walks, in its order (nil after DropNames).
func (no *NameOrder) Names() []string {
	if no.noNames {
		return nil
	}
	names := make([]string, len(no.ix.order))
	for i := range names {
		names[i] = string(no.ix.name(i))
	}
	return names
}

// Name is the name of position i of Each's walk (a Named's Index, or a
// NamedEdge's Dst): from the name index the view holds anyway, so that a
// consumer that wants edge targets by name needs no list of its own.
func (no *NameOrder) Name(i uint32) string { return string(no.ix.name(int(i))) }

// entry is one parsed entry; its slices are the entry's bytes.
type entry struct {
	rank, id uint32
	rec      []byte
	visits   []byte
}

// parseEntry reads an entry's bytes (with its length).
func parseEntry(b []byte) (entry, error) {
	if len(b) < 4+entryHeader-4 || int(binary.BigEndian.Uint32(b)) != len(b)-4 {
		return entry{}, errBadRun
	}
	e := entry{rank: binary.BigEndian.Uint32(b[4:]), id: binary.BigEndian.Uint32(b[8:])}
	n, k := binary.Uvarint(b[12:])
	if k <= 0 || n > uint64(len(b)-12-k) {
		return entry{}, errBadRun
	}
	e.rec = b[12+k : 12+k+int(n)]
	e.visits = b[12+k+int(n):]
	return e, nil
}

// errBadRun: a run file that does not read back as written (the scratch
// directory was tampered with, or the disk failed).
var errBadRun = errors.New("graph: a sorted run of the view does not read back as written")

// entryCursor reads a sorted run's entries in order: next returns an
// entry's bytes, valid until the next call; nil at the end.
type entryCursor interface {
	next() ([]byte, error)
	close()
}

type memCursor struct {
	c *chunk
	i int
}

func (m *memCursor) next() ([]byte, error) {
	if m.i == len(m.c.refs) {
		return nil, nil
	}
	m.i++
	return m.c.arena.value(m.c.refs[m.i-1].at), nil
}

func (m *memCursor) close() {}

type runCursor struct {
	r   *runfile.Reader
	buf []byte
}

func openRun(path string) (*runCursor, error) {
	r, err := runfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("graph: reading a sorted run of the view: %w", err)
	}
	return &runCursor{r: r}, nil
}

func (rc *runCursor) next() ([]byte, error) {
	var head [4]byte
	if _, err := io.ReadFull(rc.r, head[:]); err != nil {
		if err == io.EOF {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: %s: %v", errBadRun, rc.r.Name(), err)
	}
	n := int(binary.BigEndian.Uint32(head[:]))
	if n > maxEntry {
		return nil, fmt.Errorf("%w: %s: an entry of %d bytes", errBadRun, rc.r.Name(), n)
	}
	rc.buf = append(rc.buf[:0], head[:]...)
	rc.buf = slices.Grow(rc.buf, n)[:4+n]
	if _, err := io.ReadFull(rc.r, rc.buf[4:]); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", errBadRun, rc.r.Name(), err)
	}
	return rc.buf, nil
}

func (rc *runCursor) close() { rc.r.Close() }

// maxEntry bounds an entry read back (a record's value is at most
// Badger's 1 GiB, its visits far less).
const maxEntry = 2 << 30

// runHeap merges the runs' cursors by the rank of their current entries.
type runHeap struct {
	*kway.Heap
	cur  []entryCursor
	head []entry
}

// advance reads cursor k's next entry; false at its end.
func (h *runHeap) advance(k int) (bool, error) {
	b, err := h.cur[k].next()
	if err != nil || b == nil {
		return false, err
	}
	h.head[k], err = parseEntry(b)
	return err == nil, err
}

// cursors opens the view's sorted runs.
func (no *NameOrder) cursors() ([]entryCursor, error) {
	if no.mem != nil {
		return []entryCursor{&memCursor{c: no.mem}}, nil
	}
	var cur []entryCursor
	for _, r := range no.runs {
		c, err := openRun(r)
		if err != nil {
			for _, c := range cur {
				c.close()
			}
			return nil, err
		}
		cur = append(cur, c)
	}
	return cur, nil
}

// Each calls fn for every domain in name order, decoding only fields of
// each (NamedAll: its state, out-edges and visits): each field costs a
// walk over the records, and a rebuild walks them several times. The names' order is checked where
// they are decoded (NamedState, NamedName).
func (no *NameOrder) Each(fields NamedFields, fn func(*Named) error) error {
	ix := no.ix
	n := uint32(len(ix.rank))
	if no.statesOnly && fields&(NamedEdges|NamedVisits) != 0 {
		return errStatesOnly
	}
	if no.noNames && fields&NamedName != 0 {
		return errNoNames
	}
	nd := &Named{}
	if fields&(NamedState|NamedEdges|NamedVisits) == 0 {
		// Names alone: the index has them, with no record read.
		for i, id := range ix.order {
			nd.Index = uint32(i)
			nd.State = data.DomainState{ID: id, Name: string(ix.name(i))}
			if err := fn(nd); err != nil {
				return err
			}
		}
		return nil
	}
	cur, err := no.cursors()
	if err != nil {
		return err
	}
	head := make([]entry, len(cur))
	h := &runHeap{Heap: kway.New(func(a, b int) bool { return head[a].rank < head[b].rank }), cur: cur, head: head}
	defer func() {
		for _, c := range cur {
			c.close()
		}
	}()
	for k := range cur {
		ok, err := h.advance(k)
		if err != nil {
			return err
		}
		if ok {
			h.Add(k)
		}
	}
	wc := newWordCache()
	var buf []edge
	var prev string
	for i, id := range ix.order {
		if h.Len() == 0 || h.head[h.Top()].rank != uint32(i) {
			if h.Len() > 0 && h.head[h.Top()].rank < uint32(i) {
				return fmt.Errorf("%w: two records of name %q", errBadRun, ix.name(i-1))
			}
			return fmt.Errorf("%w: domain id %d has a name but no record", errCorrupt, id)
		}
		k := h.Top()
		ent := h.head[k]
		if ent.id != id {
			return fmt.Errorf("%w: the entry of name %q is of id %d, not %d", errBadRun, ix.name(i), ent.id, id)
		}
		nd.Index = uint32(i)
		nd.Edges = nd.Edges[:0]
		if fields&NamedState == 0 {
			nd.State = data.DomainState{}
			if fields&NamedName != 0 {
				nd.State = data.DomainState{ID: id, Name: string(ix.name(i))}
			}
		}
		if fields&(NamedState|NamedEdges) != 0 {
			state, adj := ent.rec, []byte(nil)
			if !no.stateRecs {
				var err error
				if state, adj, err = splitDomain(id, ent.rec); err != nil {
					return err
				}
			}
			if fields&NamedState != 0 {
				if err := decodeState(id, state, &nd.State); err != nil {
					return err
				}
				nd.State.FollowedIn = nd.State.FollowedIn || no.followed[id/64]&(1<<(id%64)) != 0
				if !no.noNames && nd.State.Name != string(ix.name(i)) {
					return fmt.Errorf("%w: the record of id %d names %q, its name key %q", errCorrupt, id, nd.State.Name, ix.name(i))
				}
				if i > 0 && nd.State.Name <= prev {
					return fmt.Errorf("%w: the record of id %d names %q, out of the name index's order (after %q)", errCorrupt, id, nd.State.Name, prev)
				}
				prev = nd.State.Name
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
		if fields&NamedVisits != 0 {
			for v := ent.visits; len(v) > 0; {
				if len(v) < 8 {
					return errBadRun
				}
				started := int64(binary.BigEndian.Uint64(v))
				l, k := binary.Uvarint(v[8:])
				if k <= 0 || l > uint64(len(v)-8-k) {
					return errBadRun
				}
				nd.Visits = append(nd.Visits, RawVisit{StartedAt: nanosTime(started), Value: v[8+k : 8+k+int(l) : 8+k+int(l)]})
				v = v[8+k+int(l):]
			}
		}
		if err := fn(nd); err != nil {
			return err
		}
		ok, err := h.advance(k)
		if err != nil {
			return err
		}
		h.Advanced(ok)
	}
	if h.Len() > 0 {
		return fmt.Errorf("%w: an entry beyond the names", errBadRun)
	}
	return nil
}
