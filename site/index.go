package site

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
)

// Index is one snapshot held in memory for serving: every domain's columns
// as flat arrays (no pointers, so a million domains cost the garbage
// collector nothing but the names), the links by source and by target, the
// link words, where each domain's visits are in visits.parquet, and the
// map's payloads. It is built once per snapshot and never changed, so
// requests read it without locks.
type Index struct {
	ID       string
	AsOf     time.Time
	Previous string
	Tiers    []data.Tier
	n        int

	names       []string
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
	lastOutcome []uint16
	flags       []uint8
	asn         []uint32 // 0 when null (AS 0 is reserved, never announced)
	operator    []uint32 // index into strs; 0 when null
	failures    []int32
	community   []int32 // -1 when null
	point       []int32 // index on the map (rank order); -1 when not placed

	strs    []string // interned strings (outcomes, operators, reasons, words); strs[0] = ""
	byName  []int32  // rows sorted by name
	byRank  []int32  // ranked rows, best first
	order   []int32  // every row in map order: ranked by rank, then the rest by name
	posOf   []int32  // row → its place in order
	outOff  []uint32 // links by source: outTo[outOff[r]:outOff[r+1]], best-ranked target first
	outTo   []uint32 // row | linkNofollow | linkSitewide
	inOff   []uint32 // links by target, best-ranked source first
	inFrom  []uint32
	wordOff []uint32 // link words: wordStr/wordSites[wordOff[r]:wordOff[r+1]], most used first
	wordStr []uint32
	wordUse []uint32

	visitFrom []uint32 // a row's visits are visits.parquet rows [visitFrom-1, visitTo); 0: none
	visitTo   []uint32
	visits    *visitFile

	schedNext     []int64 // noTime when not scheduled
	schedReason   []uint16
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

// loadIndex reads a snapshot into memory.
func loadIndex(src *source, o mapOptions) (ix *Index, err error) {
	m := src.manifest()
	ix = &Index{ID: src.id(), AsOf: m.AsOf, Previous: m.Previous, Tiers: m.Tiers, strs: []string{""},
		communityTop: map[int32][]int32{}, communitySize: map[int32]int32{}}
	if len(ix.Tiers) == 0 {
		ix.Tiers = schedule.DefaultTiers
	}
	interned := map[string]uint32{"": 0}
	intern := func(s string) uint32 {
		if i, ok := interned[s]; ok {
			return i
		}
		i := uint32(len(ix.strs))
		s = strings.Clone(s)
		ix.strs = append(ix.strs, s)
		interned[s] = i
		return i
	}
	var xs, ys []float64
	err = src.eachDomain(func(rows []data.DomainRow) error {
		for i := range rows {
			if ix.n >= maxDomains {
				return fmt.Errorf("%w: more than %d", ErrTooBig, maxDomains)
			}
			ix.addDomain(&rows[i], intern)
			x, y := math.NaN(), math.NaN()
			if r := &rows[i]; r.MapX != nil && r.MapY != nil && finite(*r.MapX) && finite(*r.MapY) {
				x, y = *r.MapX, *r.MapY
			}
			xs, ys = append(xs, x), append(ys, y)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ix.ID, err)
	}
	ix.sortRows()
	if err := ix.loadEdges(src); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ix.ID, err)
	}
	if err := ix.loadWords(src, intern); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ix.ID, err)
	}
	if err := ix.loadSchedule(src, intern); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ix.ID, err)
	}
	if err := ix.loadVisits(src); err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", ix.ID, err)
	}
	ix.mapData, err = buildMap(ix, xs, ys, o)
	if err != nil {
		ix.Close()
		return nil, fmt.Errorf("snapshot %s: %w", ix.ID, err)
	}
	return ix, nil
}

// Close releases the open visits file.
func (ix *Index) Close() error {
	if ix.visits != nil {
		return ix.visits.close()
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func clamp32(v int64) int32 { return int32(min(max(v, 0), math.MaxInt32)) }
func clamp16(v int32) int16 { return int16(min(max(v, math.MinInt16), math.MaxInt16)) }

func micros(t *time.Time) int64 {
	if t == nil || t.IsZero() {
		return noTime
	}
	return t.UnixMicro()
}

func (ix *Index) addDomain(r *data.DomainRow, intern func(string) uint32) {
	ix.n++
	ix.names = append(ix.names, strings.Clone(r.Domain))
	ix.storeID = append(ix.storeID, r.ID)
	rk, prev := int32(0), int32(0)
	if r.Rank != nil {
		rk = clamp32(*r.Rank)
	}
	if r.PrevRank != nil {
		prev = clamp32(*r.PrevRank)
	}
	ix.rank, ix.prevRank = append(ix.rank, rk), append(ix.prevRank, prev)
	ix.score = append(ix.score, r.Score)
	ix.inDomains = append(ix.inDomains, clamp32(r.InDomains))
	ix.outDomains = append(ix.outDomains, clamp32(r.OutDomains))
	ix.tier = append(ix.tier, uint8(min(max(r.Tier, 0), 255)))
	ix.revisitDays = append(ix.revisitDays, clamp16(r.RevisitDays))
	ix.pages = append(ix.pages, clamp16(r.PagesPerVisit))
	ix.firstSeen = append(ix.firstSeen, micros(&r.FirstSeen))
	ix.lastVisit = append(ix.lastVisit, micros(r.LastVisit))
	ix.nextVisit = append(ix.nextVisit, micros(r.NextVisit))
	status := int16(-1)
	if r.LastStatus != nil {
		status = clamp16(*r.LastStatus)
	}
	ix.lastStatus = append(ix.lastStatus, status)
	var outcome, op uint32
	if r.LastOutcome != nil {
		outcome = intern(*r.LastOutcome)
	}
	if r.NetworkOperator != nil {
		op = intern(*r.NetworkOperator)
	}
	ix.lastOutcome = append(ix.lastOutcome, uint16(min(outcome, math.MaxUint16)))
	ix.operator = append(ix.operator, op)
	var f uint8
	if r.HTTPS != nil {
		f |= flagHTTPSKnown
		if *r.HTTPS {
			f |= flagHTTPS
		}
	}
	if r.IPv6 != nil {
		f |= flagIPv6Known
		if *r.IPv6 {
			f |= flagIPv6
		}
	}
	if r.OptedOut {
		f |= flagOptedOut
	}
	ix.flags = append(ix.flags, f)
	var asn uint32
	if r.ASN != nil && *r.ASN > 0 && *r.ASN <= math.MaxUint32 {
		asn = uint32(*r.ASN)
	}
	ix.asn = append(ix.asn, asn)
	ix.failures = append(ix.failures, r.Failures)
	c := int32(-1)
	if r.Community != nil && *r.Community >= 0 {
		c = *r.Community
	}
	ix.community = append(ix.community, c)
}

// sortRows orders the rows by name (for lookups), by rank (the rankings)
// and in map order (ranked by rank, then the rest by name), and notes each
// community's size and best-ranked members.
func (ix *Index) sortRows() {
	ix.byName = make([]int32, ix.n)
	for i := range ix.byName {
		ix.byName[i] = int32(i)
	}
	slices.SortFunc(ix.byName, func(a, b int32) int { return cmp.Compare(ix.names[a], ix.names[b]) })
	ix.order = make([]int32, 0, ix.n)
	var unranked []int32
	for _, r := range ix.byName {
		if ix.rank[r] > 0 {
			ix.order = append(ix.order, r)
		} else {
			unranked = append(unranked, r)
		}
	}
	// Stable: equal ranks (clamped ones) stay by name.
	slices.SortStableFunc(ix.order, func(a, b int32) int { return cmp.Compare(ix.rank[a], ix.rank[b]) })
	ix.byRank = ix.order[:len(ix.order):len(ix.order)]
	ix.order = append(ix.order, unranked...)
	ix.posOf = make([]int32, ix.n)
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

// communityNamedBy is how many of its top domains name a community.
const communityNamedBy = 3

// loadEdges builds the links by source and by target, each list in map
// order (best-ranked first), with three counting-sort passes over the
// edges rather than a sort per list.
func (ix *Index) loadEdges(src *source) error {
	rowOf, err := ix.rowsByStoreID()
	if err != nil {
		return err
	}
	var from, to []uint32 // links as rows with flags on the target
	err = src.eachEdge(func(rows []edgeCols) error {
		for _, e := range rows {
			s, d := rowOf(e.SrcID), rowOf(e.DstID)
			if s < 0 || d < 0 {
				ix.skipped++
				continue
			}
			t := uint32(d)
			if e.Nofollow {
				t |= linkNofollow
			}
			if e.Sitewide {
				t |= linkSitewide
			}
			from, to = append(from, uint32(s)), append(to, t)
		}
		return nil
	})
	if err != nil {
		return err
	}
	ix.edges = int64(len(from))
	if len(from) > math.MaxUint32 {
		return fmt.Errorf("%w: more than %d links", ErrTooBig, uint32(math.MaxUint32))
	}
	n := ix.n
	// Pass 1: by target in file order.
	inOff, inFrom := bucket(n, len(from), func(yield func(key int, val uint32)) {
		for i, s := range from {
			yield(int(to[i]&linkRow), s|(to[i]&^linkRow))
		}
	})
	from, to = nil, nil
	// Pass 2: by source, visiting targets in map order: each source's list
	// comes out best-ranked target first.
	ix.outOff, ix.outTo = bucket(n, len(inFrom), func(yield func(key int, val uint32)) {
		for _, d := range ix.order {
			for _, s := range inFrom[inOff[d]:inOff[d+1]] {
				yield(int(s&linkRow), uint32(d)|(s&^linkRow))
			}
		}
	})
	// Pass 3: by target again, visiting sources in map order.
	ix.inOff, ix.inFrom = bucket(n, len(ix.outTo), func(yield func(key int, val uint32)) {
		for _, s := range ix.order {
			for _, d := range ix.outTo[ix.outOff[s]:ix.outOff[s+1]] {
				yield(int(d&linkRow), uint32(s)|(d&^linkRow))
			}
		}
	})
	return nil
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

// rowsByStoreID maps the store ids edges.parquet names to rows: a slice
// when the ids are dense (as the store makes them), else a map.
func (ix *Index) rowsByStoreID() (func(int32) int32, error) {
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
		return func(id int32) int32 {
			if id < 0 || int(id) >= len(dense) {
				return -1
			}
			return dense[id]
		}, nil
	}
	sparse := make(map[int32]int32, ix.n)
	for r, id := range ix.storeID {
		sparse[id] = int32(r)
	}
	return func(id int32) int32 {
		if r, ok := sparse[id]; ok {
			return r
		}
		return -1
	}, nil
}

// loadWords keeps each domain's link words, most used first.
func (ix *Index) loadWords(src *source, intern func(string) uint32) error {
	type use struct {
		row         int32
		word, sites uint32
	}
	var uses []use
	err := src.eachLinkWord(func(rows []data.LinkWordRow) error {
		for _, w := range rows {
			r := ix.Find(w.Domain)
			if r < 0 {
				continue
			}
			uses = append(uses, use{r, intern(w.Word), uint32(min(max(w.Sites, 0), math.MaxUint32))})
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
func (ix *Index) loadSchedule(src *source, intern func(string) uint32) error {
	ix.schedNext = make([]int64, ix.n)
	for i := range ix.schedNext {
		ix.schedNext[i] = noTime
	}
	ix.schedReason = make([]uint16, ix.n)
	ix.schedPages = make([]int16, ix.n)
	ix.schedPriority = make([]int64, ix.n)
	return src.eachSchedule(func(rows []scheduleCols) error {
		for _, s := range rows {
			r := ix.Find(s.Domain)
			if r < 0 {
				continue
			}
			ix.schedNext[r] = micros(&s.NextVisit)
			ix.schedReason[r] = uint16(min(intern(s.Reason), math.MaxUint16))
			ix.schedPages[r] = clamp16(s.Pages)
			ix.schedPriority[r] = s.Priority
		}
		return nil
	})
}

// loadVisits notes where each domain's rows are in visits.parquet (stored
// by domain, so each domain's rows are one run; a file in another order
// still reads right, only more rows are read per page) and keeps the file
// open for the domain pages.
func (ix *Index) loadVisits(src *source) error {
	ix.visitFrom = make([]uint32, ix.n)
	ix.visitTo = make([]uint32, ix.n)
	var row uint32
	last, lastRow := "", int32(-1)
	err := src.eachVisitDomain(func(rows []visitDomain) error {
		for _, v := range rows {
			if row == 0 || v.Domain != last {
				last, lastRow = strings.Clone(v.Domain), ix.Find(v.Domain)
			}
			if r := lastRow; r >= 0 {
				if ix.visitFrom[r] == 0 {
					ix.visitFrom[r] = row + 1
				}
				ix.visitTo[r] = row + 1
			}
			if row == math.MaxUint32-1 {
				return fmt.Errorf("%w: more than %d visits", ErrTooBig, uint32(math.MaxUint32-1))
			}
			row++
		}
		return nil
	})
	if err != nil {
		return err
	}
	ix.visits, err = src.openVisits()
	return err
}

// Find returns the row of a domain (as stored: lower case, A-label), or -1.
func (ix *Index) Find(name string) int32 {
	i := sort.Search(len(ix.byName), func(i int) bool { return ix.names[ix.byName[i]] >= name })
	if i < len(ix.byName) && ix.names[ix.byName[i]] == name {
		return ix.byName[i]
	}
	return -1
}

// Len is the number of domains.
func (ix *Index) Len() int { return ix.n }
