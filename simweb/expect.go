package simweb

import (
	"cmp"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Token is the robots.txt token the expectations and checkers apply.
const Token = "MapTheNetBot"

// MaxBodyBytes is where a correct crawler stops reading a response
// (DESIGN.md: 1024 KB of decoded content).
const MaxBodyBytes = 1024 << 10

// FirstVisitPages is the lowest tier's page budget, which every first visit
// gets and ExpectedEdges assumes.
const FirstVisitPages = 8

// Edge is one domain-level edge a correct crawler records.
type Edge struct {
	Src, Dst string
	Nofollow bool // every link Src→Dst read was nofollow/ugc/sponsored or on a nofollow page
	Sitewide bool // on every HTML page read in a complete visit of 3 pages or more
	// Words are the distinct link words (sorted) of the anchors to Dst on
	// pages that count, and of the titles of feed items linking Dst.
	Words []string
	// FromFeed: some link Src→Dst came from a feed item.
	FromFeed bool
}

// ExpectedEdges returns the edges a correct crawler records after one
// complete visit of every site with FirstVisitPages pages (sorted by Src,
// then Dst). Assumptions: every site is visited (seed them all: Seeds);
// same-site links are read breadth-first in document order, the feed
// advertised in <head> first; a visit cut short by the page budget (only
// KindCalendar's is) counts as complete; sites that cannot be read (robots
// unavailable, opted out, throttled or blocked at the home page, home page
// errors) give no edges; KindThrottle429Date gives its home page's links,
// never sitewide; KindMoved gives one followed edge to where it moved.
func (w *Web) ExpectedEdges() []Edge {
	w.expectOnce.Do(func() { w.expected = w.ExpectedEdgesWithBudget(FirstVisitPages) })
	out := slices.Clone(w.expected)
	for i := range out {
		out[i].Words = slices.Clone(out[i].Words)
	}
	return out
}

// ExpectedEdgesWithBudget is ExpectedEdges for another page budget.
func (w *Web) ExpectedEdgesWithBudget(pages int) []Edge {
	var out []Edge
	for _, s := range w.world.sites {
		out = append(out, w.world.simulate(s, pages).edges...)
	}
	return out
}

// ExpectedPages is how many pages a correct first visit of domain requests
// (every request but robots.txt and redirect responses).
func (w *Web) ExpectedPages(domain string) int {
	s := w.world.byName[domain]
	if s == nil {
		return 0
	}
	return w.world.simulate(s, FirstVisitPages).pages
}

// WordCount is one link word of a domain.
type WordCount struct {
	Word  string
	Sites int // distinct linking domains that used it
}

// ExpectedLinkWords is DESIGN.md's link_words per target domain, computed
// over the followed ExpectedEdges (nofollow links count nowhere, as in
// in_domains): words used by 3 or more linking domains, at most 10, most
// used first, ties by word.
func (w *Web) ExpectedLinkWords() map[string][]WordCount {
	counts := map[string]map[string]int{}
	for _, e := range w.ExpectedEdges() {
		if e.Nofollow {
			continue
		}
		m := counts[e.Dst]
		if m == nil {
			m = map[string]int{}
			counts[e.Dst] = m
		}
		for _, wd := range e.Words {
			m[wd]++
		}
	}
	out := map[string][]WordCount{}
	for dst, m := range counts {
		var wc []WordCount
		for wd, n := range m {
			if n >= 3 {
				wc = append(wc, WordCount{wd, n})
			}
		}
		slices.SortFunc(wc, func(a, b WordCount) int {
			return cmp.Or(cmp.Compare(b.Sites, a.Sites), cmp.Compare(a.Word, b.Word))
		})
		if len(wc) > 10 {
			wc = wc[:10]
		}
		if len(wc) > 0 {
			out[dst] = wc
		}
	}
	return out
}

// visitSim is what a correct visit of one site does.
type visitSim struct {
	edges    []Edge
	pages    int      // page requests (not robots.txt, not redirect responses)
	urls     []string // every request, redirect hops included, robots.txt left out
	complete bool
	cut      bool // the page budget ended the visit with pages still queued
}

type edgeAgg struct {
	followed bool
	counted  bool // some page that counts (not noindex) links it
	pages    map[int]bool
	words    map[string]bool
	fromFeed bool
}

// simulate runs DESIGN.md's visit over the model (see ExpectedEdges).
func (wd *world) simulate(s *site, budget int) visitSim {
	var v visitSim
	type target struct {
		h  *host
		pq string
	}
	queue := []target{{s.primary, "/"}}
	seen := map[string]bool{}
	aggs := map[string]*edgeAgg{}
	html := 0
	for first := true; len(queue) > 0 && v.pages < budget; first = false {
		t := queue[0]
		queue = queue[1:]
		if seen[t.h.name+t.pq] {
			first = false
			continue
		}
		seen[t.h.name+t.pq] = true
		h, pq := t.h, t.pq
		var p *page
		for hops := 0; ; hops++ {
			if !h.robots.available() || !h.robots.allowed(Token, pq) || isMediaPath(pq) {
				break
			}
			var how answerKind
			p, how = h.resolve(pq)
			if how == answerRefuse {
				p = nil
				break
			}
			v.urls = append(v.urls, h.origin()+pq)
			if p.location == "" || p.status < 300 || p.status > 399 {
				v.pages++
				break
			}
			if hops == 5 { // a sixth redirect: give up on this page
				p = nil
				break
			}
			next, err := url.Parse(h.origin() + pq)
			if err == nil {
				next, err = next.Parse(p.location)
			}
			if err != nil {
				p = nil
				break
			}
			nh := wd.byHost[strings.ToLower(next.Hostname())]
			if nh == nil || nh.site != s {
				if first && nh != nil { // the home page moved to another site
					v.edges = []Edge{{Src: s.Domain, Dst: nh.site.Domain}}
				}
				return v
			}
			h, pq = nh, next.RequestURI()
			seen[h.name+pq] = true
		}
		if p == nil {
			if first {
				return v
			}
			continue
		}
		if p.status == 429 || p.status == 503 {
			if first {
				return v
			}
			v.complete = false
			return v.finish(s, aggs, html, false)
		}
		if p.status != 200 {
			if first {
				return v
			}
			continue
		}
		if p.kind == pageRaw {
			continue // dropped at its headers (or a page with no links)
		}
		if p.feed != nil {
			queue = append(queue, target{h, normalizePath(p.feed.href)})
		}
		large := p.kind == pageHTML && p.large()
		if large {
			p.rendered(false) // for linkEnds
		}
		pageNo := -1
		if p.kind == pageHTML {
			pageNo = html
			html++
		}
		for i, l := range p.links() {
			if large && p.linkEnds[i] > MaxBodyBytes {
				continue
			}
			follow := !p.nofollow && !l.relNofollow()
			if l.site == s {
				if follow {
					queue = append(queue, target{wd.byHost[l.host], l.path})
				}
				continue
			}
			dst := registrable(l)
			a := aggs[dst]
			if a == nil {
				a = &edgeAgg{pages: map[int]bool{}, words: map[string]bool{}}
				aggs[dst] = a
			}
			if pageNo >= 0 {
				a.pages[pageNo] = true
			}
			if p.noindex {
				continue
			}
			a.counted = true
			a.followed = a.followed || follow
			for _, x := range l.words() {
				a.words[x] = true
			}
			if pageNo < 0 {
				a.fromFeed = true
			}
		}
	}
	for _, t := range queue {
		v.cut = v.cut || !seen[t.h.name+t.pq]
	}
	return v.finish(s, aggs, html, true)
}

func (v visitSim) finish(s *site, aggs map[string]*edgeAgg, html int, complete bool) visitSim {
	v.complete = complete
	for dst, a := range aggs {
		if !a.counted {
			continue
		}
		e := Edge{Src: s.Domain, Dst: dst, Nofollow: !a.followed, FromFeed: a.fromFeed,
			Sitewide: complete && html >= 3 && len(a.pages) == html}
		for x := range a.words {
			e.Words = append(e.Words, x)
		}
		slices.Sort(e.Words)
		v.edges = append(v.edges, e)
	}
	slices.SortFunc(v.edges, func(a, b Edge) int { return cmp.Compare(a.Dst, b.Dst) })
	return v
}

// registrable is the registrable domain a link points at: its site's, or
// (for hosts of no site) the host itself, which in this web is always a
// name directly under an unknown TLD.
func registrable(l link) string {
	if l.site != nil {
		return l.site.Domain
	}
	return l.host
}

// mediaExts are the extensions DESIGN.md says are never requested.
var mediaExts = map[string]bool{
	".png": true, ".jpg": true, ".jpeg": true, ".gif": true, ".webp": true, ".svg": true, ".ico": true,
	".bmp": true, ".tif": true, ".tiff": true, ".avif": true, ".pdf": true, ".zip": true, ".gz": true,
	".tgz": true, ".tar": true, ".bz2": true, ".xz": true, ".7z": true, ".rar": true, ".mp3": true,
	".mp4": true, ".m4a": true, ".wav": true, ".ogg": true, ".flac": true, ".webm": true, ".mov": true,
	".avi": true, ".mkv": true,
}

// isMediaPath reports whether a path's extension says image, PDF,
// archive or media.
func isMediaPath(pathQuery string) bool {
	p, _, _ := strings.Cut(pathQuery, "?")
	return mediaExts[strings.ToLower(path.Ext(p))]
}
