package page

import (
	"bufio"
	"io"
	"net/url"
	"strings"

	"github.com/mapthenet/mapthenet/data"
	"golang.org/x/net/html"
	"golang.org/x/net/html/charset"
	"golang.org/x/text/transform"
)

// ReadHTML reads an HTML page with a zero Reader (the defaults).
func ReadHTML(r io.Reader, contentType string, pageURL *url.URL) (*Page, error) {
	return (&Reader{}).ReadHTML(r, contentType, pageURL)
}

// ReadHTML reads an HTML document from r (the response body, served with
// contentType from pageURL) and returns its links, feeds and robots meta
// tags. It streams with html.Tokenizer rather than building a tree
// (html.Parse): the crawler reads every page it fetches, and the tokenizer
// is several times faster and allocates far less. It reads at most MaxBytes
// of decoded content. The Page is never nil; err is the body's read error,
// if any, and the Page then holds what came before it.
func (rd *Reader) ReadHTML(r io.Reader, contentType string, pageURL *url.URL) (*Page, error) {
	p := &Page{URL: pageURL}
	br := bufio.NewReaderSize(r, 4096)
	// A failed Peek is not fatal: its error comes back on the next read,
	// which is where capReader records it.
	head, _ := br.Peek(1024)
	var src io.Reader = br
	if enc, name, _ := charset.DetermineEncoding(head, contentType); name != "utf-8" {
		// UTF-8 is read as it is (invalid bytes simply fail to be
		// letters); anything else is decoded.
		src = transform.NewReader(br, enc.NewDecoder())
	}
	cr := newCapReader(src, rd.maxBytes())
	h := &htmlReader{
		page:  p,
		token: rd.token(),
		col:   newCollector(rd.maxLinks()),
	}
	h.run(html.NewTokenizer(cr))

	base := pageURL
	if h.base != nil {
		base = h.base
	}
	p.Links = h.col.links(base)
	p.LinksCapped = h.col.capped
	for _, f := range h.feeds {
		if u := resolve(base, f); u != nil && !containsURL(p.Feeds, u) {
			p.Feeds = append(p.Feeds, u)
		}
	}
	p.Truncated = cr.truncated
	p.Bytes = cr.n
	return p, cr.err
}

// readFragment reads the links of an HTML fragment, a feed post's content,
// into col with ReadHTML's rules for links (<a> and <area> hrefs, rel
// nofollow/ugc/sponsored, anchor words; <template>, <script> and the other
// raw-text elements skipped, <noscript> read), so that a post's links are
// read exactly as a page's. Relative hrefs resolve against base (nil: the
// feed's own address). The document-level tags of a fragment (<base>,
// <meta>, <link>) are ignored: a post's author cannot make the feed that
// carries it noindex, move its base or advertise feeds from it. The caller
// bounds len(src) (see postBudget).
func (rd *Reader) readFragment(src string, base *url.URL, col *collector) {
	h := &htmlReader{token: rd.token(), col: col, fragment: true, linkBase: base}
	h.run(html.NewTokenizer(strings.NewReader(src)))
}

// htmlReader is the state of one streaming read.
type htmlReader struct {
	page  *Page // nil for a fragment
	token string
	col   *collector

	fragment bool     // a feed post (readFragment): links only
	linkBase *url.URL // the base links are collected under (nil: the document's)

	baseSeen bool     // the first <base href> was met (valid or not)
	base     *url.URL // its URL, when valid
	feeds    []string // advertised feed hrefs, resolved at the end

	template int  // depth of <template>: its content is inert
	rawNext  bool // the next text token is a raw-text element's content

	// The open anchor, if any.
	inAnchor bool
	href     string
	hasHref  bool
	nofollow bool
	text     []byte
}

func (h *htmlReader) run(z *html.Tokenizer) {
	for {
		tt := z.Next()
		raw := h.rawNext
		h.rawNext = false
		switch tt {
		case html.ErrorToken:
			h.closeAnchor()
			return
		case html.TextToken:
			if raw || !h.inAnchor || h.template > 0 {
				continue
			}
			h.addText(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			var buf [maxTagName]byte
			h.startTag(z, tagName(z.Raw(), false, &buf))
		case html.EndTagToken:
			var buf [maxTagName]byte
			name := tagName(z.Raw(), true, &buf)
			switch string(name) {
			case "a":
				h.closeAnchor()
			case "template":
				if h.template > 0 {
					h.template--
				}
			default:
				h.separate(name)
			}
		}
	}
}

// startTag acts on a start tag. Attributes are read only for the few tags
// that matter (TagAttr allocates); a tag without any yields none.
func (h *htmlReader) startTag(z *html.Tokenizer, name []byte) {
	switch string(name) {
	case "template":
		// <template/> opens a template too: HTML ignores the slash.
		h.template++
		return
	case "noscript":
		// We run no script, so <noscript> content is what we see: read it
		// as markup rather than as the raw text the tokenizer assumes.
		z.NextIsNotRawText()
		return
	case "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "plaintext":
		h.rawNext = true
		h.separate(name)
		return
	}
	if h.template > 0 {
		return
	}
	switch string(name) {
	case "a":
		h.closeAnchor() // an <a> closes any open one (no nesting in HTML)
		h.openAnchor(z)
	case "area":
		h.area(z)
	case "img":
		if h.inAnchor {
			h.imgAlt(z)
		}
	case "base", "meta", "link":
		switch {
		case h.fragment:
			h.separate(name)
		case string(name) == "meta":
			h.meta(z)
		case string(name) == "link":
			h.linkTag(z)
		case !h.baseSeen:
			h.baseTag(z)
		}
	default:
		h.separate(name)
	}
}

// maxTagName is longer than any tag name we act on; longer names are read
// as "x" (some element we ignore).
const maxTagName = 16

// tagName reads a tag's name from its raw text ("<A href…", "</a>") into
// buf, lower case. The tokenizer's TagName allocates a copy for every tag;
// reading the raw bytes does not, and tags are most of a page's tokens.
func tagName(raw []byte, end bool, buf *[maxTagName]byte) []byte {
	i := 1
	if end {
		i = 2
	}
	n := 0
	for ; i < len(raw); i++ {
		c := raw[i]
		if c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == '/' || c == '>' {
			break
		}
		if n == maxTagName {
			buf[0], n = 'x', 1
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[n] = c
		n++
	}
	return buf[:n]
}

// inline elements do not separate the words of anchor text; other tags do
// (<br>, <div>, <li> …).
func isInline(name []byte) bool {
	switch string(name) {
	case "b", "i", "u", "s", "em", "strong", "span", "small", "big", "mark", "sub", "sup",
		"abbr", "code", "font", "wbr", "q", "cite", "dfn", "kbd", "samp", "var", "tt", "bdi", "bdo", "ins", "del", "time", "data":
		return true
	}
	return false
}

func (h *htmlReader) separate(name []byte) {
	if h.inAnchor && !isInline(name) {
		h.addText([]byte{' '})
	}
}

func (h *htmlReader) addText(t []byte) {
	if room := maxAnchorText - len(h.text); room > 0 {
		if len(t) > room {
			t = t[:room]
		}
		h.text = append(h.text, t...)
	}
}

func (h *htmlReader) openAnchor(z *html.Tokenizer) {
	h.inAnchor = true
	h.hasHref, h.href, h.nofollow = false, "", false
	h.text = h.text[:0]
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "href":
			h.href, h.hasHref = string(v), true
		case "xlink:href":
			if !h.hasHref {
				h.href, h.hasHref = string(v), true
			}
		case "rel":
			h.nofollow = relNofollow(v)
		}
	}
}

func (h *htmlReader) closeAnchor() {
	if !h.inAnchor {
		return
	}
	h.inAnchor = false
	if h.hasHref {
		h.col.add(h.href, h.linkBase, h.nofollow, Words(string(h.text), data.MaxWordsPerLink))
	}
	h.text = h.text[:0]
}

func (h *htmlReader) area(z *html.Tokenizer) {
	var href, alt string
	var has, nofollow bool
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "href":
			href, has = string(v), true
		case "alt":
			alt = string(v)
		case "rel":
			nofollow = relNofollow(v)
		}
	}
	if has {
		h.col.add(href, h.linkBase, nofollow, Words(alt, data.MaxWordsPerLink))
	}
}

func (h *htmlReader) imgAlt(z *html.Tokenizer) {
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		if string(k) == "alt" {
			h.addText([]byte{' '})
			h.addText(v)
			h.addText([]byte{' '})
		}
	}
}

func (h *htmlReader) baseTag(z *html.Tokenizer) {
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		if string(k) == "href" {
			h.baseSeen = true
			// Relative bases resolve against the page's address; one that
			// is not http(s) leaves the page's address in force.
			h.base = absolute(h.page.URL, string(v))
			return
		}
	}
}

func (h *htmlReader) meta(z *html.Tokenizer) {
	var name, content string
	var hasContent bool
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "name":
			name = strings.ToLower(strings.TrimSpace(string(v)))
		case "content":
			content, hasContent = string(v), true
		}
	}
	if !hasContent {
		return
	}
	switch name {
	case "robots", h.token:
		d := parseMetaRobots(content)
		h.page.NoIndex = h.page.NoIndex || d.NoIndex
		h.page.NoFollow = h.page.NoFollow || d.NoFollow
	case "mapthenet-verification":
		if c := strings.TrimSpace(content); c != "" && len(h.page.Verification) < 16 {
			h.page.Verification = append(h.page.Verification, c)
		}
	}
}

func (h *htmlReader) linkTag(z *html.Tokenizer) {
	var href, typ string
	var alternate, has bool
	for more := true; more; {
		var k, v []byte
		k, v, more = z.TagAttr()
		switch string(k) {
		case "href":
			href, has = string(v), true
		case "type":
			typ = string(v)
		case "rel":
			alternate = hasToken(v, "alternate")
		}
	}
	if has && alternate && isFeedType(typ) && len(h.feeds) < maxFeeds {
		h.feeds = append(h.feeds, href)
	}
}

// maxFeeds bounds the advertised feeds taken from one page.
const maxFeeds = 16

// relNofollow reports whether a rel value marks the link nofollow.
func relNofollow(rel []byte) bool {
	return hasToken(rel, "nofollow") || hasToken(rel, "ugc") || hasToken(rel, "sponsored")
}

// hasToken reports whether the space-separated list v holds tok
// (ASCII case-insensitive).
func hasToken(v []byte, tok string) bool {
	for _, f := range strings.Fields(string(v)) {
		if strings.EqualFold(f, tok) {
			return true
		}
	}
	return false
}

func containsURL(us []*url.URL, u *url.URL) bool {
	s := u.String()
	for _, x := range us {
		if x.String() == s {
			return true
		}
	}
	return false
}
