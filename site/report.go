package site

import (
	"github.com/mapthenet/mapthenet/snapshot"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mapthenet/mapthenet/domain"
)

// The JSON API's shapes (DESIGN.md, "serve"). Field names follow
// `rank DOMAIN --json`, of which a domain's report is a superset.

// domainJSON is `rank DOMAIN --json`'s report (snapshot.DomainJSON, one
// definition for both) with what the site adds.
type domainJSON struct {
	Snapshot string    `json:"snapshot"`
	AsOf     time.Time `json:"as_of"`
	snapshot.DomainJSON
	Community       *communityJSON `json:"community"`
	HTTPS           *bool          `json:"https"`
	IPv6            *bool          `json:"ipv6"`
	ASN             *int64         `json:"asn"`
	NetworkOperator *string        `json:"network_operator"`
	Point           *int32         `json:"point"` // index in the map's payloads; null when not placed
	InLinks         linksJSON      `json:"in_links"`
	OutLinks        linksJSON      `json:"out_links"`
}

type communityJSON struct {
	ID   int32    `json:"id"`
	Size int32    `json:"size"`
	Top  []string `json:"top"`
}

// linksJSON is a page of a domain's links one way, best-ranked first.
type linksJSON struct {
	Total    int        `json:"total"`
	Nofollow int        `json:"nofollow"` // of total
	Offset   int        `json:"offset"`
	Items    []linkJSON `json:"items"`
}

type linkJSON struct {
	Domain   string `json:"domain"`
	Rank     *int64 `json:"rank"`
	Point    *int32 `json:"point"`
	Nofollow bool   `json:"nofollow"`
	Sitewide bool   `json:"sitewide"`
}

// Links shown per page, and at most per request of the API (the map
// draws up to that many).
const (
	linksPerPage = 50
	maxLinks     = 5000
	maxVisits    = 10
)

func ptr[T any](v T) *T { return &v }

func timeOf(us int64) *time.Time {
	if us == noTime {
		return nil
	}
	return ptr(time.UnixMicro(us).UTC())
}

// report is everything the snapshot says of row r, with the first page of
// its links each way.
func (ix *Index) report(r int32, inOff, outOff, limit int) *domainJSON {
	d := &domainJSON{Snapshot: ix.ID, AsOf: ix.AsOf.UTC(), DomainJSON: snapshot.DomainJSON{
		Domain: ix.name(r), Score: ix.score[r], Tier: int32(ix.tier[r]),
		RevisitDays: int32(ix.revisitDays[r]), PagesPerVisit: int32(ix.pages[r]), InDomains: int64(ix.inDomains[r]),
		OutDomains: int64(ix.outDomains[r]), OptedOut: ix.flags[r]&flagOptedOut != 0, Failures: ix.failures[r],
		FirstSeen: timeOf(ix.firstSeen[r]), LastVisit: timeOf(ix.lastVisit[r]),
		LinkWords: []snapshot.LinkWordJSON{}, Visits: []snapshot.VisitJSON{}}}
	if rk := ix.rank[r]; rk > 0 {
		d.Rank = ptr(int64(rk))
	}
	if p := ix.prevRank[r]; p > 0 {
		d.PrevRank = ptr(int64(p))
		if d.Rank != nil {
			d.Move = ptr(int64(p) - *d.Rank)
		}
	}
	if c := ix.community[r]; c >= 0 {
		d.Community = &communityJSON{ID: c, Size: ix.communitySize[c]}
		for _, t := range ix.communityTop[c] {
			d.Community.Top = append(d.Community.Top, ix.name(t))
		}
	}
	f := ix.flags[r]
	if f&flagHTTPSKnown != 0 {
		d.HTTPS = ptr(f&flagHTTPS != 0)
	}
	if f&flagIPv6Known != 0 {
		d.IPv6 = ptr(f&flagIPv6 != 0)
	}
	if a := ix.asn[r]; a > 0 {
		d.ASN = ptr(int64(a))
	}
	if op := ix.operator[r]; op > 0 {
		d.NetworkOperator = ptr(ix.strs[op])
	}
	if st := ix.lastStatus[r]; st >= 0 {
		d.LastStatus = ptr(int32(st))
	}
	if o := ix.lastOutcome[r]; o > 0 {
		d.LastOutcome = ptr(ix.strs[o])
	}
	if p := ix.point[r]; p >= 0 {
		d.Point = ptr(p)
	}
	for i := ix.wordOff[r]; i < ix.wordOff[r+1]; i++ {
		d.LinkWords = append(d.LinkWords, snapshot.LinkWordJSON{Word: ix.strs[ix.wordStr[i]], Sites: int64(ix.wordUse[i])})
	}
	d.InLinks = ix.links(ix.inFrom[ix.inOff[r]:ix.inOff[r+1]], inOff, limit)
	d.OutLinks = ix.links(ix.outTo[ix.outOff[r]:ix.outOff[r+1]], outOff, limit)
	if next := ix.schedNext[r]; next != noTime {
		reason := ix.strs[ix.schedReason[r]]
		last := ""
		if d.LastOutcome != nil {
			last = *d.LastOutcome
		}
		d.NextVisit = &snapshot.NextVisitJSON{At: time.UnixMicro(next).UTC(), Reason: reason, Tier: d.Tier,
			Pages: int32(ix.schedPages[r]), Priority: ix.schedPriority[r],
			Why: snapshot.NextVisitWhy(reason, d.InDomains, d.Tier, d.RevisitDays, d.Failures, last)}
	}
	d.Visits = ix.recentVisits(r)
	return d
}

func (ix *Index) links(list []uint32, offset, limit int) linksJSON {
	out := linksJSON{Total: len(list), Offset: offset, Items: []linkJSON{}}
	for _, l := range list {
		if l&linkNofollow != 0 {
			out.Nofollow++
		}
	}
	if offset > len(list) {
		return out
	}
	for _, l := range list[offset:min(len(list), offset+limit)] {
		t := int32(l & linkRow)
		it := linkJSON{Domain: ix.name(t), Nofollow: l&linkNofollow != 0, Sitewide: l&linkSitewide != 0}
		if rk := ix.rank[t]; rk > 0 {
			it.Rank = ptr(int64(rk))
		}
		if p := ix.point[t]; p >= 0 {
			it.Point = ptr(p)
		}
		out.Items = append(out.Items, it)
	}
	return out
}

// lookup finds the domain a request names, writing the 404 when it is not
// in the snapshot.
func (s *Server) lookup(w http.ResponseWriter, r *http.Request, api bool) (*Index, int32) {
	name, ok := s.domainParam(w, r, api)
	if !ok {
		return nil, -1
	}
	ix := s.index(w, r, api)
	if ix == nil {
		return nil, -1
	}
	row := ix.Find(name)
	if row < 0 {
		s.notFoundDomain(w, r, api, name, "is not in snapshot "+ix.ID)
		return nil, -1
	}
	return ix, row
}

func (s *Server) apiDomain(w http.ResponseWriter, r *http.Request) {
	ix, row := s.lookup(w, r, true)
	if ix == nil {
		return
	}
	writeJSON(w, r, http.StatusOK, ix.report(row, 0, 0, linksPerPage))
}

func (s *Server) apiLinks(w http.ResponseWriter, r *http.Request) {
	ix, row := s.lookup(w, r, true)
	if ix == nil {
		return
	}
	q := r.URL.Query()
	offset, ok1 := intParam(q, "offset", 0, 1<<30)
	limit, ok2 := intParam(q, "limit", linksPerPage, maxLinks)
	var list []uint32
	switch q.Get("dir") {
	case "in":
		list = ix.inFrom[ix.inOff[row]:ix.inOff[row+1]]
	case "out", "":
		list = ix.outTo[ix.outOff[row]:ix.outOff[row+1]]
	default:
		ok1 = false
	}
	if !ok1 || !ok2 {
		writeJSONError(w, http.StatusBadRequest, "want dir=in|out, offset and limit (0 to 5000)")
		return
	}
	writeJSON(w, r, http.StatusOK, struct {
		Snapshot string `json:"snapshot"`
		Domain   string `json:"domain"`
		Dir      string `json:"dir"`
		linksJSON
	}{ix.ID, ix.name(row), cmpOr(q.Get("dir"), "out"), ix.links(list, offset, limit)})
}

func cmpOr(a, b string) string {
	if a == "" {
		return b
	}
	return a
}

// searchHit is one answer of /api/search.
type searchHit struct {
	Domain string `json:"domain"`
	Rank   *int64 `json:"rank"`
	Point  *int32 `json:"point"`
}

const maxSearchHits = 10

// search finds the domain q names (a host or URL reduces to its
// registrable domain) and, after it, the best-ranked domains whose names
// start with q.
func (ix *Index) search(q string, limit int) []searchHit {
	q = strings.ToLower(strings.TrimSpace(q))
	hits := []searchHit{}
	if q == "" {
		return hits
	}
	hit := func(r int32) searchHit {
		h := searchHit{Domain: ix.name(r)}
		if rk := ix.rank[r]; rk > 0 {
			h.Rank = ptr(int64(rk))
		}
		if p := ix.point[r]; p >= 0 {
			h.Point = ptr(p)
		}
		return h
	}
	exact := int32(-1)
	if d, err := domain.Normalize(q); err == nil {
		exact = ix.Find(d)
	}
	if exact < 0 {
		exact = ix.Find(q)
	}
	if exact >= 0 {
		hits = append(hits, hit(exact))
	}
	// Names starting with q are one run of byName; the best-ranked few of
	// it (up to 200,000 looked at) follow the exact match.
	lo := sort.Search(len(ix.byName), func(i int) bool { return ix.name(ix.byName[i]) >= q })
	var best []int32
	for i := lo; i < len(ix.byName) && i < lo+200_000 && strings.HasPrefix(ix.name(ix.byName[i]), q); i++ {
		r := ix.byName[i]
		if r == exact {
			continue
		}
		best = append(best, r)
		if len(best) > 4*limit {
			slices.SortFunc(best, func(a, b int32) int { return int(ix.posOf[a]) - int(ix.posOf[b]) })
			best = best[:limit]
		}
	}
	slices.SortFunc(best, func(a, b int32) int { return int(ix.posOf[a]) - int(ix.posOf[b]) })
	for _, r := range best {
		if len(hits) >= limit {
			break
		}
		hits = append(hits, hit(r))
	}
	return hits
}

func (s *Server) apiSearch(w http.ResponseWriter, r *http.Request) {
	ix := s.index(w, r, true)
	if ix == nil {
		return
	}
	q := r.URL.Query().Get("q")
	if len(q) > 300 {
		writeJSONError(w, http.StatusBadRequest, "q is too long")
		return
	}
	writeJSON(w, r, http.StatusOK, struct {
		Snapshot string      `json:"snapshot"`
		Hits     []searchHit `json:"hits"`
	}{ix.ID, ix.search(q, maxSearchHits)})
}

func (s *Server) apiSnapshot(w http.ResponseWriter, r *http.Request) {
	ix := s.index(w, r, true)
	if ix == nil {
		return
	}
	writeJSON(w, r, http.StatusOK, struct {
		Snapshot string    `json:"snapshot"`
		AsOf     time.Time `json:"as_of"`
		Previous string    `json:"previous"`
		Domains  int       `json:"domains"`
		Ranked   int       `json:"ranked"`
		Placed   int       `json:"placed"`
		Links    int64     `json:"links"`
	}{ix.ID, ix.AsOf.UTC(), ix.Previous, ix.n, len(ix.byRank), ix.mapData.placed, ix.edges})
}

// rankingRow is one row of the rankings.
type rankingRow struct {
	Rank       int64   `json:"rank"`
	Domain     string  `json:"domain"`
	Score      float64 `json:"score"`
	PrevRank   *int64  `json:"prev_rank"`
	Move       *int64  `json:"move"`
	InDomains  int64   `json:"in_domains"`
	OutDomains int64   `json:"out_domains"`
	Tier       int     `json:"tier"`
	Community  *int32  `json:"community"`
}

const (
	rankingsPerPage = 100
	maxRankings     = 1000
)

func (ix *Index) rankings(offset, limit int) []rankingRow {
	out := []rankingRow{}
	if offset >= len(ix.byRank) {
		return out
	}
	for _, r := range ix.byRank[offset:min(len(ix.byRank), offset+limit)] {
		row := rankingRow{Rank: int64(ix.rank[r]), Domain: ix.name(r), Score: ix.score[r], InDomains: int64(ix.inDomains[r]),
			OutDomains: int64(ix.outDomains[r]), Tier: int(ix.tier[r])}
		if p := ix.prevRank[r]; p > 0 {
			row.PrevRank, row.Move = ptr(int64(p)), ptr(int64(p)-row.Rank)
		}
		if c := ix.community[r]; c >= 0 {
			row.Community = ptr(c)
		}
		out = append(out, row)
	}
	return out
}

func (s *Server) apiRankings(w http.ResponseWriter, r *http.Request) {
	ix := s.index(w, r, true)
	if ix == nil {
		return
	}
	q := r.URL.Query()
	offset, ok1 := intParam(q, "offset", 0, 1<<31-1)
	limit, ok2 := intParam(q, "limit", rankingsPerPage, maxRankings)
	if !ok1 || !ok2 {
		writeJSONError(w, http.StatusBadRequest, "want offset and limit (0 to 1000) as whole numbers")
		return
	}
	writeJSON(w, r, http.StatusOK, struct {
		Snapshot string       `json:"snapshot"`
		AsOf     time.Time    `json:"as_of"`
		Ranked   int          `json:"ranked"`
		Offset   int          `json:"offset"`
		Top      []rankingRow `json:"top"`
	}{ix.ID, ix.AsOf.UTC(), len(ix.byRank), offset, ix.rankings(offset, limit)})
}
