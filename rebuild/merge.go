package rebuild

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/internal/kway"
	"github.com/mapthenet/mapthenet/snapshot"
)

// Merge is the whole store as the K parts of its shards show it (a
// Source): a streaming k-way merge of the parts' rows, each part's sorted
// by name. A part is read either from its files (OpenMerge: a fleet's
// nodes export them) or straight from a local shard's view (localMerge:
// a rebuild of a store on this machine), through mergeInput. A domain's
// global id is its index in the name order of all the parts' names
// together, so the same store gives the same ids, rows and files whatever
// its K (and whatever order it was recorded in), and whether its parts
// were files or not.
//
// A name several shards know (a domain and the references to it as a
// link target) is one domain: its state is that of the record with the
// latest visit (its own shard's; the references were never visited),
// first seen is the earliest of the records', and it is followed-in or
// seeded if any record says so. Edges, visits and link-word counts need
// no combining: a domain's out-links and visits are in its own shard only
// (a domain with out-links in two parts is refused), and the link-word
// counts of the shards count disjoint linking domains, so they add up.
//
// Memory: the id table (4 bytes per name per part that knows it), the
// names by id (the rebuild's name table) and a few batches of rows per
// part and stream; never the edges. A local shard's part is its view
// sorted by name (graph.NameOrder): a chunk in memory at most, kept to its
// states once the edges are read (ReleaseEdges), or runs on disk, each
// read through a buffer of its own.
type Merge struct {
	in    []mergeInput
	ids   [][]uint32 // per part: row of its domains file → global id
	n     uint32
	names []string // by global id
}

// OpenMerge checks that parts are the K parts of one store, in shard
// order, written by this store format, and reads their names to number
// the domains.
func OpenMerge(parts []*snapshot.Part) (*Merge, error) {
	if len(parts) == 0 {
		return nil, errors.New("merge: no parts")
	}
	for i, p := range parts {
		m := p.Manifest
		switch {
		case m.Shards != len(parts) || m.Shard != i:
			return nil, fmt.Errorf("merge: part %s is shard %d of %d, want shard %d of %d", p.Dir, m.Shard, m.Shards, i, len(parts))
		case m.StoreFormat != graph.FormatVersion:
			return nil, fmt.Errorf("merge: part %s holds states of store format %d, this program reads %d", p.Dir, m.StoreFormat, graph.FormatVersion)
		}
	}
	in := make([]mergeInput, len(parts))
	for k, p := range parts {
		in[k] = partInput{p}
	}
	return newMerge(in)
}

// newMerge reads the inputs' names to number the domains.
func newMerge(in []mergeInput) (*Merge, error) {
	mg := &Merge{in: in, ids: make([][]uint32, len(in))}
	if err := mg.number(); err != nil {
		return nil, err
	}
	mg.dropNames()
	return mg, nil
}

// dropNames lets the inputs that hold their names in memory (a local
// shard's sorted view: graph.NameOrder.DropNames) let them go once the
// merge has its own copy (Names): at L, 34M names in the eight shards'
// views, 600 MiB that the merge's table of 10M repeats. The merge checks
// each state's name against its table instead (Domains).
func (mg *Merge) dropNames() {
	for _, in := range mg.in {
		if d, ok := in.(interface{ dropNames() }); ok {
			d.dropNames()
		}
	}
}

// number is the merge of the parts' names: each distinct name gets the
// next global id, each part's rows their names' ids.
func (mg *Merge) number() error {
	cur, err := openAll(mg.in, mergeInput.names)
	if err != nil {
		return err
	}
	defer closeAll(cur)
	heads := make([]*partName, len(cur))
	h := kway.New(func(a, b int) bool { return heads[a].Domain < heads[b].Domain })
	for k, c := range cur {
		if heads[k] = c.Next(); heads[k] != nil {
			h.Add(k)
		} else if err := c.Err(); err != nil {
			return err
		}
	}
	var last string
	for h.Len() > 0 {
		k := h.Top()
		name := heads[k].Domain
		if mg.n > 0 && name <= last {
			// Only a part out of order can bring a name back.
			return fmt.Errorf("merge: %s: names out of order (%q after %q)", mg.in[k], name, last)
		}
		last = strings.Clone(name)
		mg.names = append(mg.names, last)
		g := mg.n
		mg.n++
		for h.Len() > 0 && heads[h.Top()].Domain == last {
			k := h.Top()
			mg.ids[k] = append(mg.ids[k], g)
			if heads[k] = cur[k].Next(); heads[k] != nil {
				h.Fix()
			} else {
				if err := cur[k].Err(); err != nil {
					return err
				}
				h.Drop()
			}
		}
	}
	for k, in := range mg.in {
		if want := in.domainCount(); int64(len(mg.ids[k])) != want {
			return fmt.Errorf("merge: %s: %d names, %s", in, len(mg.ids[k]), in.countSource(want))
		}
	}
	return nil
}

// NumDomains is the number of distinct names: ids are 0 to NumDomains-1.
func (mg *Merge) NumDomains() uint32 { return mg.n }

// ReleaseEdges tells the merge that its edges, visits and link words
// will not be read again, only its domains: a local shard's view held in
// memory then lets them go (graph.NameOrder.KeepStates), most of its
// memory; runs and parts' files hold nothing in memory. Not while a
// stream is read.
func (mg *Merge) ReleaseEdges() error {
	for _, in := range mg.in {
		if r, ok := in.(interface{ releaseEdges() error }); ok {
			if err := r.releaseEdges(); err != nil {
				return err
			}
		}
	}
	return nil
}

// Names are the domains' names by id, read when the parts were opened:
// the rebuild's name table without a walk of every state for it.
func (mg *Merge) Names() []string { return mg.names }

// global maps row of part k to its global id.
func (mg *Merge) global(k int, row int32) (uint32, error) {
	if row < 0 || int(row) >= len(mg.ids[k]) {
		return 0, fmt.Errorf("merge: %s names domain row %d of %d", mg.in[k], row, len(mg.ids[k]))
	}
	if len(mg.ids) == 1 {
		return uint32(row), nil // one part's rows are the ids: no lookup, which per edge is a cache miss
	}
	return mg.ids[k][row], nil
}

// Domains calls fn for every domain in id (name) order, its records in
// the parts merged.
func (mg *Merge) Domains(fn func(*data.DomainState) error) error {
	cur, err := openAll(mg.in, mergeInput.domains)
	if err != nil {
		return err
	}
	defer closeAll(cur)
	rows := make([]int32, len(cur)) // the row each cursor is at
	h := kway.New(func(a, b int) bool { return mg.ids[a][rows[a]] < mg.ids[b][rows[b]] })
	heads := make([]*domainRecord, len(cur))
	for k, c := range cur {
		if heads[k] = c.Next(); heads[k] != nil {
			h.Add(k)
		} else if err := c.Err(); err != nil {
			return err
		}
	}
	var states []data.DomainState
	for g := uint32(0); h.Len() > 0; g++ {
		states = states[:0]
		for h.Len() > 0 {
			k := h.Top()
			if mg.ids[k][rows[k]] != g {
				break
			}
			st := heads[k].State
			if st.Name != mg.names[g] {
				return fmt.Errorf("merge: %s: the state of domain id %d names %q, not %q", mg.in[k], g, st.Name, mg.names[g])
			}
			st.ID = g
			states = append(states, st)
			rows[k]++
			if heads[k] = cur[k].Next(); heads[k] != nil {
				h.Fix()
			} else {
				if err := cur[k].Err(); err != nil {
					return err
				}
				h.Drop()
			}
		}
		if len(states) == 0 {
			return fmt.Errorf("merge: domain id %d has no record (the parts changed since they were opened?)", g)
		}
		st := mergeStates(states)
		if err := fn(&st); err != nil {
			return err
		}
	}
	return nil
}

// mergeStates is one domain's state from the records of the shards that
// know it (see Merge).
func mergeStates(states []data.DomainState) data.DomainState {
	st := states[0]
	for _, o := range states[1:] {
		if o.LastVisit.After(st.LastVisit) {
			first, followed, seeded := st.FirstSeen, st.FollowedIn, st.Seeded
			st = o
			st.FirstSeen, st.FollowedIn, st.Seeded = first, followed, seeded
		}
		if !o.FirstSeen.IsZero() && (st.FirstSeen.IsZero() || o.FirstSeen.Before(st.FirstSeen)) {
			st.FirstSeen = o.FirstSeen
		}
		st.FollowedIn = st.FollowedIn || o.FollowedIn
		st.Seeded = st.Seeded || o.Seeded
	}
	return st
}

// Edges calls fn for every edge in (src id, dst id) order.
func (mg *Merge) Edges(fn func(*data.EdgeRecord) error) error {
	cur, err := openAll(mg.in, mergeInput.edges)
	if err != nil {
		return err
	}
	defer closeAll(cur)
	keys := make([]uint64, len(cur)) // global src<<32 | dst of each head
	rec := make([]data.EdgeRecord, len(cur))
	h := kway.New(func(a, b int) bool { return keys[a] < keys[b] })
	advance := func(k int) (bool, error) {
		r := cur[k].Next()
		if r == nil {
			return false, cur[k].Err()
		}
		s, err := mg.global(k, r.Src)
		if err != nil {
			return false, err
		}
		d, err := mg.global(k, r.Dst)
		if err != nil {
			return false, err
		}
		key := uint64(s)<<32 | uint64(d)
		if key <= keys[k] && keys[k] != noKey {
			return false, fmt.Errorf("merge: %s: edges out of order or repeated (%d→%d)", mg.in[k], s, d)
		}
		keys[k] = key
		rec[k] = data.EdgeRecord{SrcID: s, DstID: d, FirstSeen: nanos(r.FirstSeen), LastSeen: nanos(r.LastSeen),
			Nofollow: r.Nofollow, Sitewide: r.Sitewide}
		return true, nil
	}
	for k := range cur {
		keys[k] = noKey
		ok, err := advance(k)
		if err != nil {
			return err
		}
		if ok {
			h.Add(k)
		}
	}
	lastSrc, lastPart := noKey, -1
	for h.Len() > 0 {
		k := h.Top()
		// A run: this part's edges while they come before every other
		// part's next, with no heap work.
		for {
			src := keys[k] >> 32
			if src == lastSrc && k != lastPart {
				return fmt.Errorf("merge: domain id %d has out-links in shards %d and %d: the shards disagree on its owner", src, lastPart, k)
			}
			lastSrc, lastPart = src, k
			e := rec[k]
			if err := fn(&e); err != nil {
				return err
			}
			ok, err := advance(k)
			if err != nil {
				return err
			}
			if !ok {
				h.Drop()
				break
			}
			if h.Len() > 1 && !h.HeadFirst() {
				h.Fix()
				break
			}
		}
	}
	return nil
}

// noKey is a key before any: no row read yet.
const noKey = ^uint64(0)

// Visits calls fn for every visit-log entry in (id, start) order.
func (mg *Merge) Visits(fn func(*data.VisitLogEntry) error) error {
	cur, err := openAll(mg.in, mergeInput.visits)
	if err != nil {
		return err
	}
	defer closeAll(cur)
	type key struct {
		id uint32
		at int64
	}
	keys := make([]key, len(cur))
	heads := make([]*data.PartVisitRow, len(cur))
	h := kway.New(func(a, b int) bool {
		return keys[a].id < keys[b].id || keys[a].id == keys[b].id && keys[a].at < keys[b].at
	})
	advance := func(k int) (bool, error) {
		r := cur[k].Next()
		heads[k] = r
		if r == nil {
			return false, cur[k].Err()
		}
		id, err := mg.global(k, r.Domain)
		if err != nil {
			return false, err
		}
		keys[k] = key{id, r.StartedAt}
		return true, nil
	}
	for k := range cur {
		ok, err := advance(k)
		if err != nil {
			return err
		}
		if ok {
			h.Add(k)
		}
	}
	for h.Len() > 0 {
		k := h.Top()
		v, err := graph.DecodeVisit(keys[k].id, graph.RawVisit{StartedAt: nanos(keys[k].at), Value: heads[k].Visit})
		if err != nil {
			return fmt.Errorf("merge: %s: %w", mg.in[k], err)
		}
		if err := fn(&v); err != nil {
			return err
		}
		ok, err := advance(k)
		if err != nil {
			return err
		}
		h.Advanced(ok)
	}
	return nil
}

// LinkWords calls fn for every (target id, word) with the sum of the
// parts' counts, in (target id, word) order.
func (mg *Merge) LinkWords(fn func(dst uint32, word string, sites int64) error) error {
	cur, err := openAll(mg.in, mergeInput.linkWords)
	if err != nil {
		return err
	}
	defer closeAll(cur)
	dsts := make([]uint32, len(cur))
	heads := make([]*data.PartLinkWordRow, len(cur))
	h := kway.New(func(a, b int) bool {
		return dsts[a] < dsts[b] || dsts[a] == dsts[b] && heads[a].Word < heads[b].Word
	})
	advance := func(k int) (bool, error) {
		r := cur[k].Next()
		heads[k] = r
		if r == nil {
			return false, cur[k].Err()
		}
		d, err := mg.global(k, r.Domain)
		dsts[k] = d
		return err == nil, err
	}
	for k := range cur {
		ok, err := advance(k)
		if err != nil {
			return err
		}
		if ok {
			h.Add(k)
		}
	}
	for h.Len() > 0 {
		k := h.Top()
		dst, word := dsts[k], strings.Clone(heads[k].Word)
		var sites int64
		for h.Len() > 0 {
			k := h.Top()
			if dsts[k] != dst || heads[k].Word != word {
				break
			}
			sites += heads[k].Sites
			ok, err := advance(k)
			if err != nil {
				return err
			}
			if ok {
				if dsts[k] < dst || dsts[k] == dst && heads[k].Word <= word {
					return fmt.Errorf("merge: %s: link words out of order", mg.in[k])
				}
				h.Fix()
			} else {
				h.Drop()
			}
		}
		if err := fn(dst, word, sites); err != nil {
			return err
		}
	}
	return nil
}

func nanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// rowCursor reads one stream of a part's rows in order (snapshot.Cursor
// over a part's file, or a local shard's walk): a row Next returns stays
// valid until the batch after it is read.
type rowCursor[T any] interface {
	Next() *T // nil at the end or after an error (Err)
	Err() error
	Close() error
}

// mergeInput is one part as the merge reads it: its streams, each opened
// anew for every pass, rows in the part's order (names in byte order;
// edges by (src row, dst row); visits by (domain row, start); link-word
// counts by (domain row, word)), domains named by their row in the
// part's names.
type mergeInput interface {
	String() string     // names the part in errors
	domainCount() int64 // the names the part says it has
	countSource(int64) string
	names() (rowCursor[partName], error)
	domains() (rowCursor[domainRecord], error)
	edges() (rowCursor[data.PartEdgeRow], error)
	visits() (rowCursor[data.PartVisitRow], error)
	linkWords() (rowCursor[data.PartLinkWordRow], error)
}

// partName reads only a part's domain names.
type partName struct {
	Domain string `parquet:"domain"`
}

// domainRecord is one name of a part with its state (ID not set).
type domainRecord struct {
	State data.DomainState
}

func openAll[T any](in []mergeInput, open func(mergeInput) (rowCursor[T], error)) ([]rowCursor[T], error) {
	cur := make([]rowCursor[T], len(in))
	for k, p := range in {
		c, err := open(p)
		if err != nil {
			closeAll(cur)
			return nil, err
		}
		cur[k] = c
	}
	return cur, nil
}

func closeAll[T any](cur []rowCursor[T]) {
	for _, c := range cur {
		if c != nil {
			c.Close()
		}
	}
}

// partInput reads a part from its files (snapshot.Cursor).
type partInput struct{ p *snapshot.Part }

func (pi partInput) String() string { return pi.p.Dir }

func (pi partInput) domainCount() int64 { return pi.p.Manifest.Counts[data.PartDomainsFile] }

func (pi partInput) countSource(n int64) string { return fmt.Sprintf("its part.json says %d", n) }

func (pi partInput) names() (rowCursor[partName], error) {
	return snapshot.OpenCursor[partName](pi.p, data.PartDomainsFile)
}

func (pi partInput) domains() (rowCursor[domainRecord], error) {
	c, err := snapshot.OpenCursor[data.PartDomainRow](pi.p, data.PartDomainsFile)
	if err != nil {
		return nil, err
	}
	return &stateDecoder{dir: pi.p.Dir, c: c}, nil
}

func (pi partInput) edges() (rowCursor[data.PartEdgeRow], error) {
	return snapshot.OpenCursor[data.PartEdgeRow](pi.p, data.PartEdgesFile)
}

func (pi partInput) visits() (rowCursor[data.PartVisitRow], error) {
	return snapshot.OpenCursor[data.PartVisitRow](pi.p, data.PartVisitsFile)
}

func (pi partInput) linkWords() (rowCursor[data.PartLinkWordRow], error) {
	return snapshot.OpenCursor[data.PartLinkWordRow](pi.p, data.PartLinkWordsFile)
}

// stateDecoder reads a part's domains file as records, each state decoded
// from the store's encoding the export wrote it in.
type stateDecoder struct {
	dir string
	c   *snapshot.Cursor[data.PartDomainRow]
	rec domainRecord
	err error
}

func (d *stateDecoder) Next() *domainRecord {
	if d.err != nil {
		return nil
	}
	r := d.c.Next()
	if r == nil {
		return nil
	}
	st, err := graph.DecodeState(0, r.State)
	if err != nil {
		d.err = fmt.Errorf("merge: %s: domain %q: %w", d.dir, r.Domain, err)
		return nil
	}
	if st.Name != r.Domain {
		d.err = fmt.Errorf("merge: %s: the state of %q names %q", d.dir, r.Domain, st.Name)
		return nil
	}
	d.rec.State = st
	return &d.rec
}

func (d *stateDecoder) Err() error {
	if d.err != nil {
		return d.err
	}
	return d.c.Err()
}

func (d *stateDecoder) Close() error { return d.c.Close() }
