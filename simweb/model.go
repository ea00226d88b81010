package simweb

import (
	"net/http"
	"strings"
	"sync"

	"github.com/mapthenet/mapthenet/data"
)

// Site is one registrable domain of the web, as tests see it.
type Site struct {
	Domain     string       // the registrable domain (eTLD+1), lower case
	Kind       Kind         // its behaviour
	Hosts      []string     // every host name that answers for it
	Home       string       // the home page URL a seed list names
	Platform   string       // shared platform ("github.io"), else ""
	Outcome    data.Outcome // what a correct crawler's visit ends with
	HTTPStatus int          // the visits.http_status a correct crawler records (0: none)
	HTTPS      bool         // whether HTTPS works for it
	CrawlDelay int          // robots.txt Crawl-delay for MapTheNetBot, seconds
	// RobotsStatus is the status of the home host's robots.txt as a visit
	// records it: the last response's (the sixth redirect's for
	// KindRobotsRedirect6), 0 when none came (KindRobotsHang).
	RobotsStatus int
	Generated    bool // one of Config.Sites's generated sites (not a named one)
}

// site is the server's model of one site.
type site struct {
	Site
	idx     int
	primary *host
	hosts   []*host
	targets []*site // out-link targets drawn from the link graph, in order
}

// scheme is the scheme links to this site use.
func (s *site) scheme() string {
	if s.HTTPS {
		return "https"
	}
	return "http"
}

// tlsMode is how a host answers a TLS handshake.
type tlsMode int

const (
	tlsOK      tlsMode = iota
	tlsFail            // the handshake fails
	tlsBadCert         // a certificate from a CA the crawler does not trust
)

// challengeMode is a host's bot protection, if any.
type challengeMode int

const (
	challengeNone challengeMode = iota
	challengeCF
	challengeGeneric
)

// host is one host name of a site.
type host struct {
	name   string
	site   *site
	robots robotsFile
	pages  map[string]*page // by normalizePath(path?query)
	tls    tlsMode
	nav    []link // the nav of its pages (calendar pages are made on demand)

	refuse            bool          // close every plain connection unanswered
	redirectAll       string        // redirect every page but robots.txt to this origin
	challenge         challengeMode // answer every page but robots.txt with a challenge
	throttleAfterHome bool          // every page but / and robots.txt: 429 (HTTP-date Retry-After)
	calendar          bool          // /calendar/YYYY/MM pages exist for every month
	slow              bool          // every response waits Config.SlowDelay
}

func (h *host) origin() string { return h.site.scheme() + "://" + h.name }

// pageKind is what a page's body is.
type pageKind int

const (
	pageHTML pageKind = iota
	pageRSS
	pageAtom
	pageJSONFeed
	pageRaw
)

// page is one answer of a host: a status, headers and a body rendered
// from links on first use.
type page struct {
	status   int
	ctype    string
	header   http.Header
	location string // redirects: the Location value
	kind     pageKind
	raw      []byte // pageRaw

	title    string
	metas    [][2]string // name, content
	feed     *feedRef    // advertised by <link rel="alternate">
	nav      []link      // in <nav>, on every page of a site
	sections []section   // the body
	items    []link      // feeds: one item per link
	posts    []feedPost  // feeds: the HTML content of some items
	gzip     bool        // serve gzip-encoded when the client accepts it

	// noindex / nofollow as MapTheNetBot must read them (meta and
	// X-Robots-Tag for it or for all robots, never other bots').
	noindex, nofollow bool

	once     sync.Once
	gzOnce   sync.Once
	body     []byte
	gzBody   []byte
	linkEnds []int // byte offset where each link of links() ends in body
}

// section is filler text of about filler bytes, then links.
type section struct {
	filler int
	links  []link
}

type feedRef struct{ href, typ string }

// feedPost is the HTML content (the post) of one feed item: its links are
// read as a page's are (rel flags, anchor words; same-site ones followed).
type feedPost struct {
	item  int      // index in page.items
	form  postForm // how the feed writes it
	base  string   // Atom: the xml:base on the post's element ("": none)
	links []link   // href as written (relative to base when it is set)
}

// postForm is how a post is written in its feed.
type postForm int

const (
	postEscaped postForm = iota // RSS <description>, Atom type="html": entity-escaped HTML
	postCDATA                   // RSS <content:encoded> in CDATA
	postXHTML                   // Atom <summary type="xhtml">: inline XHTML
)

// links lists a page's links in document order: nav, then sections, or a
// feed's items, each followed by its post's links.
func (p *page) links() []link {
	if p.kind != pageHTML {
		if len(p.posts) == 0 {
			return p.items
		}
		var out []link
		for i, it := range p.items {
			out = append(out, it)
			for _, fp := range p.posts {
				if fp.item == i {
					out = append(out, fp.links...)
				}
			}
		}
		return out
	}
	out := append([]link(nil), p.nav...)
	for _, s := range p.sections {
		out = append(out, s.links...)
	}
	return out
}

// link is one <a href> (or feed item) and what it points at.
type link struct {
	href string // as written
	text string // anchor text as written
	rel  string
	// the target, resolved: host name, normalised path?query and site
	// (nil: no site of this web).
	host, path string
	site       *site
}

// nofollow reports whether rel marks the link nofollow.
func (l link) relNofollow() bool {
	for _, v := range strings.Fields(strings.ToLower(l.rel)) {
		if v == "nofollow" || v == "ugc" || v == "sponsored" {
			return true
		}
	}
	return false
}

// stopwords are the only stopwords anchor texts use: words every
// stopword list has, so "dropped" is not a matter of taste.
var stopwords = map[string]bool{"the": true, "and": true, "of": true, "a": true}

// words is DESIGN.md's link words of the anchor: lower case, letters only,
// stopwords dropped.
func (l link) words() []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(l.text), func(r rune) bool { return r < 'a' || r > 'z' }) {
		if !stopwords[f] {
			out = append(out, f)
		}
	}
	return out
}
