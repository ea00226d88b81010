package site

import (
	"cmp"
	"errors"
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/internal/hugepage"
	"github.com/mapthenet/mapthenet/schedule"
)

// Index is one snapshot held in memory for serving: every domain's columns
// as flat arrays, the names as one string with offsets (no pointers but
// one, so a million domains cost the garbage collector nothing), the links
// by source and by target, the link words, each domain's recent visits and
// the map's payloads. It is built once per snapshot and never changed, so
// requests read it without locks.
type Index struct {
	ID       string
	AsOf     time.Time
	Previous string
	Tiers    []data.Tier
	n        int

	nameData    string   // every name, one after the other
	nameOff     []uint32 // row r's name is nameData[nameOff[r]:nameOff[r+1]]
	storeID     []int32
	rank        []int32 // 1 = top; 0 = unranked
	prevRank    []int32 // 0 = none
	score       []float64
	inDomains   []int32
	outDomains  []int32
	tier        []uint8
	revisitDays []int16
	pages       []int16
	firstSeen   []int64 // Unix microseconds; noTime when null
	lastVisit   []int64
	nextVisit   []int64
	lastStatus  []int16 // -1 when null
	lastOutcome []uint32
	flags       []uint8
	asn         []uint32 // 0 when null (AS 0 is reserved, never announced)
	operator    []uint32 // index into strs; 0 when null
	failures    []int32
	community   []int32 // -1 when null
	point       []int32 // index on the map (rank order); -1 when not placed

	strs      []string // interned strings (outcomes, operators, reasons, words, errors); strs[0] = ""
	nameSeed  maphash.Seed
	nameSlots []uint32 // names hashed: row+1 in a slot, 0 empty (open addressing, at most half full)
	byName    []int32  // rows sorted by name
	byRank    []int32  // ranked rows, best first
	order     []int32  // every row in map order: ranked by rank, then the rest by name
	posOf     []int32  // row → its place in order
	outOff    []uint32 // links by source: outTo[outOff[r]:outOff[r+1]], best-ranked target first
	outTo     []uint32 // row | linkNofollow | linkSitewide
	inOff     []uint32 // links by target, best-ranked source first
	inFrom    []uint32
	wordOff   []uint32 // link words: wordStr/wordSites[wordOff[r]:wordOff[r+1]], most used first
	wordStr   []uint32
	wordUse   []uint32

	visits visitColumns

	schedNext     []int64 // noTime when not scheduled
	schedReason   []uint32
	schedPages    []int16
	schedPriority []int64

	communityTop  map[int32][]int32 // a community's best-ranked rows (a few)
	communitySize map[int32]int32

	mapData *mapPayload
	edges   int64
	skipped int64 // edge rows naming an id domains.parquet lacks
}

// Flag bits of Index.flags.
const (
	flagHTTPSKnown = 1 << iota
	flagHTTPS
	flagIPv6Known
	flagIPv6
	flagOptedOut
)

// Bits of a link (outTo, inFrom) above the row number.
const (
	linkNofollow = 1 << 31
	linkSitewide = 1 << 30
	linkRow      = linkSitewide - 1
)

const noTime = math.MinInt64

// maxDomains: rows are numbered in 30 bits, beside a link's two flags.
const maxDomains = linkRow

// ErrTooBig: the snapshot has more domains than a link row can name.
var ErrTooBig = errors.New("too many domains to serve")

// loadIndex reads a snapshot into memory. Both cores work: the row groups
// of domains.parquet and edges.parquet are decoded in parallel, the names
// are sorted in two halves, and the small files are read while the links
// are put in order.
func loadIndex(src *source, o mapOptions) (*Index, error) {
	m := src.manifest()
	ix := &Index{ID: src.id(), AsOf: m.AsOf, Previous: m.Previous, Tiers: m.Tiers, strs: []string{""},
		nameSeed: maphash.MakeSeed(), communityTop: map[int32][]int32{}, communitySize: map[int32]int32{}}
	if len(ix.Tiers) == 0 {
		ix.Tiers = schedule.DefaultTiers
	}
	if err := ix.load(src, o); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ix.ID, err)
	}
	return ix, nil
}

// load fills the index; every goroutine it starts has ended when it
// returns.
func (ix *Index) load(src *source, o mapOptions) error {
	workers := runtime.GOMAXPROCS(0)
	in := newInterner(ix)
	xs, ys, err := ix.loadDomains(src, in, workers)
	if err != nil {
		return err
	}
	var sorted sync.WaitGroup
	sorted.Add(1)
	go func() {
		defer sorted.Done()
		ix.sortRows()
	}()
	edges, err := ix.readEdges(src, workers)
	sorted.Wait()
	if err != nil {
		return err
	}
	// The links are put in order while the small files are read.
	var g errgroup.Group
	g.Go(func() error { return ix.linkEdges(edges, workers) })
	g.Go(func() error {
		if err := ix.loadWords(src, in); err != nil {
			return err
		}
		if err := ix.loadSchedule(src, in); err != nil {
			return err
		}
		return ix.loadVisits(src, in)
	})
	if err := g.Wait(); err != nil {
		return err
	}
	ix.mapData, err = buildMap(ix, xs, ys, o)
	return err
}

// interner gives each distinct string an index into ix.strs; batches
// decoded in parallel share it, each through a small cache of its own.
type interner struct {
	mu  sync.Mutex
	ix  *Index
	ids map[string]uint32
}

func newInterner(ix *Index) *interner { return &interner{ix: ix, ids: map[string]uint32{"": 0}} }

func (in *interner) intern(s string) uint32 {
	in.mu.Lock()
	defer in.mu.Unlock()
	if i, ok := in.ids[s]; ok {
		return i
	}
	i := uint32(len(in.ix.strs))
	s = strings.Clone(s)
	in.ix.strs = append(in.ix.strs, s)
	in.ids[s] = i
	return i
}

// cached interns through a cache for one batch (few distinct values,
// many rows).
func (in *interner) cached() func(string) uint32 {
	local := map[string]uint32{}
	return func(s string) uint32 {
		if i, ok := local[s]; ok {
			return i
		}
		i := in.intern(s)
		local[strings.Clone(s)] = i
		return i
	}
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func clamp32(v int64) int32 { return int32(min(max(v, 0), math.MaxInt32)) }
func clamp16(v int32) int16 { return int16(min(max(v, math.MinInt16), math.MaxInt16)) }

// name is row r's domain name.
func (ix *Index) name(r int32) string { return ix.nameData[ix.nameOff[r]:ix.nameOff[r+1]] }

// loadDomains reads domains.parquet into the columns, row groups in
// parallel, and returns the map positions (NaN where not placed).
func (ix *Index) loadDomains(src *source, in *interner, workers int) (xs, ys []float64, err error) {
	t, err := src.domains()
	if err != nil {
		return nil, nil, err
	}
	defer t.close()
	n := t.rows()
	if n > maxDomains {
		return nil, nil, fmt.Errorf("%w: %d, more than %d", ErrTooBig, n, maxDomains)
	}
	ix.n = n
	ix.storeID, ix.rank, ix.prevRank, ix.score = large[int32](n), large[int32](n), large[int32](n), large[float64](n)
	ix.inDomains, ix.outDomains, ix.tier = large[int32](n), large[int32](n), large[uint8](n)
	ix.revisitDays, ix.pages = large[int16](n), large[int16](n)
	ix.firstSeen, ix.lastVisit, ix.nextVisit = large[int64](n), large[int64](n), large[int64](n)
	ix.lastStatus, ix.lastOutcome, ix.flags = large[int16](n), large[uint32](n), large[uint8](n)
	ix.asn, ix.operator, ix.failures, ix.community = large[uint32](n), large[uint32](n), large[int32](n), large[int32](n)
	xs, ys = large[float64](n), large[float64](n)
	// Each row group's names, joined in file order once all are read.
	type names struct {
		first int
		data  []byte
		off   []uint32
	}
	var mu sync.Mutex
	var parts []names
	err = t.scan(workers, func(b *domainBatch) error {
		intern := in.cached()
		for i := range b.ID {
			r := b.First + i
			ix.storeID[r] = b.ID[i]
			ix.rank[r], ix.prevRank[r] = clamp32(b.Rank[i]), clamp32(b.PrevRank[i])
			ix.score[r] = b.Score[i]
			ix.inDomains[r], ix.outDomains[r] = clamp32(b.InDomains[i]), clamp32(b.OutDomains[i])
			ix.tier[r] = uint8(min(max(b.Tier[i], 0), 255))
			ix.revisitDays[r], ix.pages[r] = clamp16(b.RevisitDays[i]), clamp16(b.Pages[i])
			ix.firstSeen[r], ix.lastVisit[r], ix.nextVisit[r] = b.FirstSeen[i], b.LastVisit[i], b.NextVisit[i]
			ix.lastStatus[r] = clamp16(b.LastStatus[i])
			if ix.lastStatus[r] < 0 {
				ix.lastStatus[r] = -1
			}
			if !b.LastOutcome.nulls[i] {
				ix.lastOutcome[r] = intern(b.LastOutcome.str(i))
			}
			if !b.NetworkOperator.nulls[i] {
				ix.operator[r] = intern(b.NetworkOperator.str(i))
			}
			var f uint8
			if h := b.HTTPS[i]; h != boolNull {
				f |= flagHTTPSKnown
				if h == boolTrue {
					f |= flagHTTPS
				}
			}
			if v := b.IPv6[i]; v != boolNull {
				f |= flagIPv6Known
				if v == boolTrue {
					f |= flagIPv6
				}
			}
			if b.OptedOut[i] == boolTrue {
				f |= flagOptedOut
			}
			ix.flags[r] = f
			if a := b.ASN[i]; a > 0 && a <= math.MaxUint32 {
				ix.asn[r] = uint32(a)
			}
			ix.failures[r] = b.Failures[i]
			ix.community[r] = max(b.Community[i], -1)
			x, y := math.NaN(), math.NaN()
			if finite(b.MapX[i]) && finite(b.MapY[i]) {
				x, y = b.MapX[i], b.MapY[i]
			}
			xs[r], ys[r] = x, y
		}
		p := names{first: b.First, data: slices.Clone(b.Domain.data), off: slices.Clone(b.Domain.off)}
		mu.Lock()
		parts = append(parts, p)
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	slices.SortFunc(parts, func(a, b names) int { return cmp.Compare(a.first, b.first) })
	size := 0
	for _, p := range parts {
		size += len(p.data)
	}
	if size > math.MaxUint32 {
		return nil, nil, fmt.Errorf("%w: more than 4 GiB of names", ErrTooBig)
	}
	var sb strings.Builder
	sb.Grow(size)
	ix.nameOff = make([]uint32, n+1)
	for _, p := range parts {
		base := uint32(sb.Len())
		for i, o := range p.off[1:] {
			ix.nameOff[p.first+i+1] = base + o
		}
		sb.Write(p.data)
	}
	ix.nameData = sb.String()
	ix.hashNames()
	return xs, ys, nil
}

// hashNames builds the table Find looks names up in. Hand-written: a Go
// map of a million strings would cost 60 MB of pointers for the garbage
// collector to scan; this is 8 MB of plain slots.
func (ix *Index) hashNames() {
	size := 1
	for size < 2*ix.n {
		size <<= 1
	}
	ix.nameSlots = make([]uint32, size)
	mask := uint64(size - 1)
	for r := range int32(ix.n) {
		name := ix.name(r)
		for i := maphash.String(ix.nameSeed, name) & mask; ; i = (i + 1) & mask {
			s := ix.nameSlots[i]
			if s == 0 {
				ix.nameSlots[i] = uint32(r) + 1
				break
			}
			if ix.name(int32(s-1)) == name { // the first of two rows of one name wins
				break
			}
		}
	}
}

// Find returns the row of a domain (as stored: lower case, A-label), or -1.
func (ix *Index) Find(name string) int32 {
	if len(ix.nameSlots) == 0 {
		return -1
	}
	mask := uint64(len(ix.nameSlots) - 1)
	for i := maphash.String(ix.nameSeed, name) & mask; ; i = (i + 1) & mask {
		s := ix.nameSlots[i]
		if s == 0 {
			return -1
		}
		if ix.name(int32(s-1)) == name {
			return int32(s - 1)
		}
	}
}

// Len is the number of domains.
func (ix *Index) Len() int { return ix.n }

// sortRows orders the rows by name (for searches), by rank (the rankings)
// and in map order (ranked by rank, then the rest by name), and notes each
// community's size and best-ranked members.
func (ix *Index) sortRows() {
	ix.byName = ix.sortByName()
	ix.order = make([]int32, 0, ix.n)
	maxRank := int32(0)
	for _, rk := range ix.rank {
		maxRank = max(maxRank, rk)
	}
	if int64(maxRank) <= 4*int64(ix.n)+1024 {
		// Ranks are (nearly) 1..ranked: a counting sort, stable, so that
		// equal ranks (clamped ones) stay by name.
		off := make([]int32, maxRank+2)
		for _, rk := range ix.rank {
			if rk > 0 {
				off[rk+1]++
			}
		}
		for i := 1; i < len(off); i++ {
			off[i] += off[i-1]
		}
		ranked := int(off[len(off)-1])
		ix.order = ix.order[:ranked]
		for _, r := range ix.byName {
			if rk := ix.rank[r]; rk > 0 {
				ix.order[off[rk]] = r
				off[rk]++
			}
		}
	} else {
		for _, r := range ix.byName {
			if ix.rank[r] > 0 {
				ix.order = append(ix.order, r)
			}
		}
		slices.SortStableFunc(ix.order, func(a, b int32) int { return cmp.Compare(ix.rank[a], ix.rank[b]) })
	}
	ix.byRank = ix.order[:len(ix.order):len(ix.order)]
	for _, r := range ix.byName {
		if ix.rank[r] <= 0 {
			ix.order = append(ix.order, r)
		}
	}
	ix.posOf = large[int32](ix.n)
	for p, r := range ix.order {
		ix.posOf[r] = int32(p)
		if c := ix.community[r]; c >= 0 {
			ix.communitySize[c]++
			if top := ix.communityTop[c]; len(top) < communityNamedBy {
				ix.communityTop[c] = append(top, r)
			}
		}
	}
}

// sortByName sorts the rows by name, comparing the first eight bytes of
// each as one integer and the rest only on a tie; two halves sorted at
// once, then merged.
func (ix *Index) sortByName() []int32 {
	type key struct {
		head uint64
		row  int32
	}
	keys := large[key](ix.n)
	for r := range keys {
		var h uint64
		name := ix.name(int32(r))
		for k := range 8 {
			h <<= 8
			if k < len(name) {
				h |= uint64(name[k])
			}
		}
		keys[r] = key{h, int32(r)}
	}
	compare := func(a, b key) int {
		if c := cmp.Compare(a.head, b.head); c != 0 {
			return c
		}
		if c := strings.Compare(ix.name(a.row), ix.name(b.row)); c != 0 {
			return c
		}
		return cmp.Compare(a.row, b.row)
	}
	half := len(keys) / 2
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		slices.SortFunc(keys[:half], compare)
	}()
	slices.SortFunc(keys[half:], compare)
	wg.Wait()
	out := make([]int32, 0, ix.n)
	a, b := keys[:half], keys[half:]
	for len(a) > 0 && len(b) > 0 {
		if compare(a[0], b[0]) <= 0 {
			out, a = append(out, a[0].row), a[1:]
		} else {
			out, b = append(out, b[0].row), b[1:]
		}
	}
	for _, k := range a {
		out = append(out, k.row)
	}
	for _, k := range b {
		out = append(out, k.row)
	}
	return out
}

// large makes an array of n, asking for huge pages (where the system
// leaves that to the program): a fresh page costs a fault, and a load
// fills a few hundred megabytes.
func large[T any](n int) []T { return hugepage.Make[T](n, n) }

// communityNamedBy is how many of its top domains name a community.
const communityNamedBy = 3

// rawEdges are the links as read, in the file's order: source rows and
// target rows with their flags (skipEdge where an id names no domain).
type rawEdges struct {
	src, dst []uint32
	sorted   bool // by source row
}

const skipEdge = math.MaxUint32

// readEdges reads edges.parquet's ids as rows, row groups in parallel,
// each into its place.
func (ix *Index) readEdges(src *source, workers int) (*rawEdges, error) {
	rowOf, err := ix.rowsByStoreID()
	if err != nil {
		return nil, err
	}
	t, err := src.edges()
	if err != nil {
		return nil, err
	}
	defer t.close()
	m := t.rows()
	if int64(m) > math.MaxUint32 {
		return nil, fmt.Errorf("%w: more than %d links", ErrTooBig, uint32(math.MaxUint32))
	}
	e := &rawEdges{src: large[uint32](m), dst: large[uint32](m)}
	var skipped atomic.Int64
	err = t.scan(workers, func(b *edgeBatch) error {
		src, dst := e.src[b.First:b.First+len(b.SrcID)], e.dst[b.First:b.First+len(b.SrcID)]
		for i, id := range b.SrcID {
			s, d := rowOf.row(id), rowOf.row(b.DstID[i])
			if s < 0 || d < 0 {
				skipped.Add(1)
				src[i] = skipEdge
				continue
			}
			t := uint32(d)
			if b.Nofollow[i] == boolTrue {
				t |= linkNofollow
			}
			if b.Sitewide[i] == boolTrue {
				t |= linkSitewide
			}
			src[i], dst[i] = uint32(s), t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if ix.skipped = skipped.Load(); ix.skipped > 0 {
		k := 0
		for i, s := range e.src {
			if s != skipEdge {
				e.src[k], e.dst[k] = s, e.dst[i]
				k++
			}
		}
		e.src, e.dst = e.src[:k], e.dst[:k]
	}
	e.sorted = slices.IsSorted(e.src)
	ix.edges = int64(len(e.src))
	return e, nil
}

// linkEdges builds the links by source and by target, each list in map
// order (best-ranked first). edges.parquet is stored by source (and rows
// are in id order), so the links by source are the file's as they are;
// each source's list is then sorted by its targets' places on the map, and
// the links by target come out of one counting pass over the sources in
// map order.
func (ix *Index) linkEdges(e *rawEdges, workers int) error {
	n := ix.n
	if e.sorted {
		ix.outOff = make([]uint32, n+1)
		for _, s := range e.src {
			ix.outOff[s+1]++
		}
		for i := range n {
			ix.outOff[i+1] += ix.outOff[i]
		}
		ix.outTo = e.dst
	} else { // a file in another order: a counting sort by source
		ix.outOff, ix.outTo = bucket(n, len(e.src), func(yield func(key int, val uint32)) {
			for i, s := range e.src {
				yield(int(s), e.dst[i])
			}
		})
	}
	e.src, e.dst = nil, nil
	// Each out-list as map places with the flags below them, sorted as
	// numbers, then back to rows: sorting plain numbers in place is cheaper
	// than comparing through posOf.
	const placeShift = 2
	parts := splitByLinks(ix.outOff, workers)
	var wg sync.WaitGroup
	for k := range len(parts) - 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := parts[k]; s < parts[k+1]; s++ {
				list := ix.outTo[ix.outOff[s]:ix.outOff[s+1]]
				for i, l := range list {
					list[i] = uint32(ix.posOf[l&linkRow])<<placeShift | l>>30
				}
				slices.Sort(list)
				for i, p := range list {
					list[i] = uint32(ix.order[p>>placeShift]) | p<<30
				}
			}
		}()
	}
	wg.Wait()
	// The links by target: sources visited in map order, each target's
	// list comes out best-ranked source first.
	ix.inOff = make([]uint32, n+1)
	for _, l := range ix.outTo {
		ix.inOff[l&linkRow+1]++
	}
	for i := range n {
		ix.inOff[i+1] += ix.inOff[i]
	}
	ix.inFrom = large[uint32](len(ix.outTo))
	fill := slices.Clone(ix.inOff[:n])
	for _, s := range ix.order {
		for _, l := range ix.outTo[ix.outOff[s]:ix.outOff[s+1]] {
			t := l & linkRow
			ix.inFrom[fill[t]] = uint32(s) | l&^linkRow
			fill[t]++
		}
	}
	return nil
}

// splitByLinks cuts the rows into k runs of about as many links each:
// parts[i] to parts[i+1]-1.
func splitByLinks(off []uint32, k int) []int {
	n := len(off) - 1
	parts := []int{0}
	for i := 1; i < k; i++ {
		want := uint32(uint64(off[n]) * uint64(i) / uint64(k))
		at, _ := slices.BinarySearch(off, want)
		parts = append(parts, max(parts[len(parts)-1], min(at, n)))
	}
	return append(parts, n)
}

// bucket groups values by key (0..n-1) in the order they come: a counting
// sort into offsets (n+1) and values. each is called twice.
func bucket(n, m int, each func(yield func(key int, val uint32))) ([]uint32, []uint32) {
	off := make([]uint32, n+1)
	each(func(k int, _ uint32) { off[k+1]++ })
	for i := range n {
		off[i+1] += off[i]
	}
	vals := make([]uint32, m)
	fill := slices.Clone(off[:n])
	each(func(k int, v uint32) {
		vals[fill[k]] = v
		fill[k]++
	})
	return off, vals
}

// storeRows maps the store ids edges.parquet names to rows: a slice when
// the ids are dense (as the store makes them), else a map.
type storeRows struct {
	dense  []int32 // by id; -1: none
	sparse map[int32]int32
}

func (ix *Index) rowsByStoreID() (*storeRows, error) {
	maxID := int32(-1)
	for _, id := range ix.storeID {
		if id < 0 {
			return nil, fmt.Errorf("domains.parquet: negative id %d", id)
		}
		maxID = max(maxID, id)
	}
	if int64(maxID) < 4*int64(ix.n)+1024 {
		dense := make([]int32, int(maxID)+1)
		for i := range dense {
			dense[i] = -1
		}
		for r, id := range ix.storeID {
			dense[id] = int32(r)
		}
		return &storeRows{dense: dense}, nil
	}
	sparse := make(map[int32]int32, ix.n)
	for r, id := range ix.storeID {
		sparse[id] = int32(r)
	}
	return &storeRows{sparse: sparse}, nil
}

// row is the row of store id, or -1.
func (m *storeRows) row(id int32) int32 {
	if m.sparse == nil {
		if uint32(id) < uint32(len(m.dense)) {
			return m.dense[id]
		}
		return -1
	}
	if r, ok := m.sparse[id]; ok {
		return r
	}
	return -1
}

// loadWords keeps each domain's link words, most used first.
func (ix *Index) loadWords(src *source, in *interner) error {
	type use struct {
		row         int32
		word, sites uint32
	}
	var uses []use
	t, err := src.linkWords()
	if err != nil {
		return err
	}
	defer t.close()
	err = t.scan(1, func(b *linkWordBatch) error {
		for i, sites := range b.Sites {
			r := ix.Find(b.Domain.str(i))
			if r < 0 {
				continue
			}
			uses = append(uses, use{r, in.intern(b.Word.str(i)), uint32(min(max(sites, 0), math.MaxUint32))})
		}
		return nil
	})
	if err != nil {
		return err
	}
	slices.SortFunc(uses, func(a, b use) int {
		if c := cmp.Compare(a.row, b.row); c != 0 {
			return c
		}
		if c := cmp.Compare(b.sites, a.sites); c != 0 {
			return c
		}
		return cmp.Compare(ix.strs[a.word], ix.strs[b.word])
	})
	ix.wordOff = make([]uint32, ix.n+1)
	ix.wordStr = make([]uint32, len(uses))
	ix.wordUse = make([]uint32, len(uses))
	for i, u := range uses {
		ix.wordOff[u.row+1]++
		ix.wordStr[i], ix.wordUse[i] = u.word, u.sites
	}
	for i := range ix.n {
		ix.wordOff[i+1] += ix.wordOff[i]
	}
	return nil
}

// loadSchedule keeps each scheduled domain's next visit and its reason.
func (ix *Index) loadSchedule(src *source, in *interner) error {
	ix.schedNext = make([]int64, ix.n)
	for i := range ix.schedNext {
		ix.schedNext[i] = noTime
	}
	ix.schedReason = make([]uint32, ix.n)
	ix.schedPages = make([]int16, ix.n)
	ix.schedPriority = make([]int64, ix.n)
	t, err := src.schedule()
	if err != nil {
		return err
	}
	defer t.close()
	return t.scan(1, func(b *scheduleBatch) error {
		intern := in.cached()
		for i, next := range b.NextVisit {
			r := ix.Find(b.Domain.str(i))
			if r < 0 {
				continue
			}
			ix.schedNext[r] = next
			ix.schedReason[r] = intern(b.Reason.str(i))
			ix.schedPages[r] = clamp16(b.Pages[i])
			ix.schedPriority[r] = b.Priority[i]
		}
		return nil
	})
}
