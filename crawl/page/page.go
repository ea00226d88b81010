package page

import (
	"net/url"
	"slices"
	"strings"

	"github.com/mapthenet/mapthenet/data"
)

// Defaults for a zero Reader.
const (
	// DefaultToken is the robots token matched by <meta name=…> and the
	// X-Robots-Tag prefix.
	DefaultToken = "mapthenetbot"
	// DefaultMaxBytes: each read stops at 1024 KB of decoded content.
	DefaultMaxBytes = 1024 * 1024
	// DefaultMaxLinks bounds the distinct links taken from one page: a
	// page with more is a link farm, and the rest would only cost memory.
	DefaultMaxLinks = 10000
)

// Reader holds the settings for reading pages. The zero value is ready to
// use with the defaults above; a Reader is safe for concurrent use.
type Reader struct {
	Token    string // robots token; "" means DefaultToken
	MaxBytes int    // decoded bytes read per response; 0 means DefaultMaxBytes
	MaxLinks int    // distinct links kept per response; 0 means DefaultMaxLinks
}

func (r *Reader) token() string {
	if r == nil || r.Token == "" {
		return DefaultToken
	}
	return strings.ToLower(r.Token)
}

func (r *Reader) maxBytes() int {
	if r == nil || r.MaxBytes <= 0 {
		return DefaultMaxBytes
	}
	return r.MaxBytes
}

func (r *Reader) maxLinks() int {
	if r == nil || r.MaxLinks <= 0 {
		return DefaultMaxLinks
	}
	return r.MaxLinks
}

// Page is what one response yielded.
type Page struct {
	URL   *url.URL // the address the response was read from
	Links []Link   // distinct links, in order of first appearance
	// Feeds advertised by <link rel="alternate" type=feed>; HTML only.
	Feeds []*url.URL
	// NoIndex and NoFollow come from the page's own meta robots (HTML);
	// Effective merges them with X-Robots-Tag.
	NoIndex  bool
	NoFollow bool
	// Verification holds <meta name="mapthenet-verification"> contents,
	// the removal proof.
	Verification []string
	// Truncated: the response had more than MaxBytes of decoded content;
	// only the first MaxBytes were read.
	Truncated bool
	// LinksCapped: the page had more than MaxLinks distinct links; the
	// later ones were dropped.
	LinksCapped bool
	// Bytes is the decoded content read, at most MaxBytes.
	Bytes int
}

// Link is one link target of a page.
type Link struct {
	URL *url.URL // absolute http(s), no fragment, host lower case
	// Nofollow: every occurrence had rel nofollow/ugc/sponsored (or, in
	// Effective's result, the page is nofollow).
	Nofollow bool
	// Words are the link words of its anchors (see Words), distinct, at
	// most data.MaxWordsPerLink, in order of first appearance.
	Words []string
}

// Effective is what the crawler does with a page once the response's
// X-Robots-Tag is known.
type Effective struct {
	Directives // merged: the page's meta robots and the response header
	// Edges are the links that may become edges: none when NoIndex; all
	// marked Nofollow when NoFollow. (Whether a link crosses to another
	// registrable domain is the crawler's question.)
	Edges []Link
	// Follow are the links the crawler may queue (same-site ones; the
	// crawler decides which): the links not nofollow, none when NoFollow.
	// NoIndex alone does not stop following ("noindex, follow").
	Follow []*url.URL
	// Feeds advertised by the page that may be requested; none when
	// NoFollow.
	Feeds []*url.URL
}

// Effective applies header (the parsed X-Robots-Tag of the response) and
// the page's own meta robots: noindex means no edge from this page at all;
// nofollow marks every link nofollow, same-site ones included, so none is
// followed. The Page itself is not changed.
func (p *Page) Effective(header Directives) Effective {
	d := Directives{NoIndex: p.NoIndex, NoFollow: p.NoFollow}.Merge(header)
	e := Effective{Directives: d}
	if !d.NoIndex {
		e.Edges = make([]Link, len(p.Links))
		for i, l := range p.Links {
			l.Nofollow = l.Nofollow || d.NoFollow
			e.Edges[i] = l
		}
	}
	if !d.NoFollow {
		for _, l := range p.Links {
			if !l.Nofollow {
				e.Follow = append(e.Follow, l.URL)
			}
		}
		e.Feeds = p.Feeds
	}
	return e
}

// collector gathers links while a document streams by, deduplicating on
// the raw href (cheap, before resolution), and resolves them at the end,
// when the base URL is final.
type collector struct {
	max    int
	capped bool
	byRef  map[string]int // raw href → index in raw
	raw    []rawLink
}

type rawLink struct {
	href     string
	base     *url.URL // nil: resolve against the document base
	nofollow bool     // every occurrence so far was nofollow
	words    []string
}

func newCollector(max int) *collector {
	return &collector{max: max, byRef: make(map[string]int)}
}

// add records one occurrence of href. base, when not nil, overrides the
// document base (feeds: xml:base). New hrefs past the cap are dropped and
// counted in capped.
func (c *collector) add(href string, base *url.URL, nofollow bool, words []string) {
	key := href
	if base != nil {
		// The same href under another xml:base is another URL.
		key = base.String() + "\x00" + href
	}
	if i, ok := c.byRef[key]; ok {
		r := &c.raw[i]
		r.nofollow = r.nofollow && nofollow
		r.words = mergeWords(r.words, words)
		return
	}
	if len(c.raw) >= c.max {
		c.capped = true
		return
	}
	c.byRef[key] = len(c.raw)
	// words is kept without copying, clipped so that a later merge
	// appends to a copy, never into an array another link may share
	// (a feed item's links share its title's words).
	c.raw = append(c.raw, rawLink{href: href, base: base, nofollow: nofollow, words: slices.Clip(words)})
}

// links resolves the gathered hrefs against base, keeps http(s) ones and
// merges those that resolve to the same URL.
func (c *collector) links(base *url.URL) []Link {
	var out []Link
	seen := make(map[string]int, len(c.raw))
	for _, r := range c.raw {
		b := base
		if r.base != nil {
			b = r.base
		}
		u := resolve(b, r.href)
		if u == nil {
			continue
		}
		s := u.String()
		if i, ok := seen[s]; ok {
			out[i].Nofollow = out[i].Nofollow && r.nofollow
			out[i].Words = mergeWords(out[i].Words, r.words)
			continue
		}
		seen[s] = len(out)
		out = append(out, Link{URL: u, Nofollow: r.nofollow, Words: r.words})
	}
	return out
}

// mergeWords appends the words of add missing from have, up to
// data.MaxWordsPerLink.
func mergeWords(have, add []string) []string {
	for _, w := range add {
		if len(have) >= data.MaxWordsPerLink {
			break
		}
		dup := false
		for _, h := range have {
			if h == w {
				dup = true
				break
			}
		}
		if !dup {
			have = append(have, w)
		}
	}
	return have
}
