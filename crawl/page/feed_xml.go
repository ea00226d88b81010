package page

import (
	"encoding/xml"
	"fmt"
	"html"
	"io"
	"net/url"
	"strings"

	"github.com/mapthenet/mapthenet/data"
	"golang.org/x/net/html/charset"
)

const (
	xmlNamespace = "http://www.w3.org/XML/1998/namespace"
	maxFeedText  = 4096 // bytes kept of a <link>, <guid> or <title> text
)

// readXMLFeed walks an RSS or Atom document token by token. Elements are
// matched by local name and parent, not namespace, so that RSS 2.0, RSS 1.0
// (RDF) and Atom, and the sloppy mixtures found in the wild, all read:
//
//	channel/link, feed/link           the site's link (no words)
//	item/link, entry/link             an item's link (the item title's words)
//	item/guid                         unless isPermaLink="false"
//	item/title, entry/title           the item's words
//	item/description, item/encoded    the item's post (HTML: entity-escaped
//	                                  or CDATA), RSS and content:encoded
//	entry/content, entry/summary      the post, when type="html" or "xhtml"
//
// A <link> with an href attribute (Atom) counts when its rel is absent or
// "alternate"; one without href (RSS) has the URL as its text. xml:base
// applies to Atom hrefs and RSS texts alike, inherited down the tree.
//
// A post's links are read as a page's (readFragment) and resolve against
// the xml:base in scope at its element (Atom's rule, nested bases
// included), else the item's own link (its permalink: what relative links
// in a post mean to the feed readers that show it), else the feed's
// address. XHTML content arrives as elements: it is written back out as
// markup for the HTML reader, an href under an xml:base set inside the
// content made absolute first.
func readXMLFeed(r io.Reader, decoded bool, feedURL *url.URL, posts *postBudget) error {
	col := posts.col
	d := xml.NewDecoder(r)
	// Feeds in the wild carry HTML entities (&nbsp;), bare ampersands and
	// unclosed tags: read leniently. (No xml.HTMLAutoClose: it holds
	// "link", which RSS uses as a container.)
	d.Strict = false
	d.Entity = xml.HTMLEntity
	d.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		if decoded {
			// The byte order mark or Content-Type already decided, and
			// they outrank the declaration.
			return in, nil
		}
		return charset.NewReaderLabel(label, in)
	}
	f := &xmlFeed{col: col, posts: posts, feedURL: feedURL}
	for {
		tok, err := d.Token()
		if err != nil {
			f.endItem()
			if err == io.EOF {
				if !f.sawRoot {
					return fmt.Errorf("%w: no RSS or Atom root element", errNotFeed)
				}
				return nil
			}
			return err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(f.stack) == 0 && !f.sawRoot && !isFeedRoot(t.Name.Local) {
				// A sitemap, an XHTML page …: not worth reading further.
				return fmt.Errorf("%w: root element <%s>", errNotFeed, t.Name.Local)
			}
			f.start(t)
		case xml.EndElement:
			f.end()
		case xml.CharData:
			switch f.capture {
			case captureNone:
			case capturePost:
				if f.postXHTML {
					f.writePost(html.EscapeString(string(t)))
				} else {
					f.writePost(string(t))
				}
			default:
				if room := maxFeedText - f.text.Len(); room > 0 {
					if len(t) > room {
						t = t[:room]
					}
					f.text.Write(t)
				}
			}
		}
	}
}

type captureKind int

const (
	captureNone captureKind = iota
	captureLink
	captureGUID
	captureTitle
	capturePost // an item's HTML content, into post
)

type xmlFeed struct {
	col     *collector
	posts   *postBudget
	feedURL *url.URL
	sawRoot bool

	stack []xmlElem

	// The open item (RSS <item> or Atom <entry>), if any.
	inItem    bool
	itemDepth int
	links     []pendingLink
	title     string
	itemPosts []itemPost

	// Text being captured, and the depth of the element it belongs to.
	capture      captureKind
	captureDepth int
	titleHTML    bool
	text         strings.Builder

	// The post being captured (capturePost): its markup so far, whether
	// its character data is text to escape (XHTML) rather than HTML
	// source, and the xml:base in scope at its element.
	post      strings.Builder
	postXHTML bool
	postBase  *url.URL
}

// itemPost is one captured post of the open item; base is the xml:base in
// scope at its element (nil: none).
type itemPost struct {
	html string
	base *url.URL
}

type xmlElem struct {
	local string
	base  *url.URL // in-scope xml:base; nil: the feed's address
}

type pendingLink struct {
	href string
	base *url.URL
	guid bool // from <guid>, not <link>
}

func (f *xmlFeed) start(t xml.StartElement) {
	local := strings.ToLower(t.Name.Local)
	parent := ""
	var base *url.URL
	if n := len(f.stack); n > 0 {
		parent = f.stack[n-1].local
		base = f.stack[n-1].base
	} else if isFeedRoot(local) {
		f.sawRoot = true
	}
	for _, a := range t.Attr {
		if a.Name.Local == "base" && (a.Name.Space == xmlNamespace || a.Name.Space == "xml") {
			b := base
			if b == nil {
				b = f.feedURL
			}
			if u := absolute(b, a.Value); u != nil {
				base = u
			}
		}
	}
	f.stack = append(f.stack, xmlElem{local: local, base: base})
	if f.capture == capturePost {
		f.postTag(t, local, base)
		return // markup inside a post: written out for the HTML reader
	}
	if f.capture != captureNone {
		return // markup inside a captured text (an XHTML title): keep its text
	}
	switch local {
	case "item", "entry":
		// An item opening inside an open one means the open one was never
		// closed (sloppy RSS): end it here rather than merge the two.
		f.endItem()
		f.inItem, f.itemDepth = true, len(f.stack)
		f.links, f.title, f.itemPosts = f.links[:0], "", f.itemPosts[:0]
	case "description", "encoded", "content", "summary":
		if f.inItem && (parent == "item" || parent == "entry") {
			if xhtml, ok := postType(local, t.Attr); ok {
				f.startPost(xhtml, base)
			}
		}
	case "link":
		if !isFeedParent(parent) {
			return
		}
		var href, rel string
		var hasHref bool
		for _, a := range t.Attr {
			switch strings.ToLower(a.Name.Local) {
			case "href":
				href, hasHref = a.Value, true
			case "rel":
				rel = strings.ToLower(strings.TrimSpace(a.Value))
			}
		}
		if !hasHref {
			f.startCapture(captureLink)
			return
		}
		if rel == "" || rel == "alternate" || rel == "http://www.iana.org/assignments/relation/alternate" {
			f.addLink(href, base)
		}
	case "guid":
		if parent != "item" {
			return
		}
		for _, a := range t.Attr {
			if strings.EqualFold(a.Name.Local, "isPermaLink") && strings.EqualFold(strings.TrimSpace(a.Value), "false") {
				return
			}
		}
		f.startCapture(captureGUID)
	case "title":
		if (parent == "item" || parent == "entry") && f.inItem {
			f.titleHTML = false
			for _, a := range t.Attr {
				if a.Name.Local == "type" && strings.EqualFold(strings.TrimSpace(a.Value), "html") {
					f.titleHTML = true
				}
			}
			f.startCapture(captureTitle)
		}
	}
}

// postType says whether an item's element holds a post, and whether as
// XHTML: RSS <description> and <content:encoded> always hold HTML; Atom
// <content> and <summary> only with type "html" or "xhtml" (or their media
// types), never with src (content elsewhere) or type "text", the default.
func postType(local string, attrs []xml.Attr) (xhtml, ok bool) {
	if local == "description" || local == "encoded" {
		return false, true
	}
	typ := "text"
	for _, a := range attrs {
		switch strings.ToLower(a.Name.Local) {
		case "type":
			typ = strings.ToLower(strings.TrimSpace(a.Value))
		case "src":
			return false, false
		}
	}
	switch typ {
	case "html", "text/html":
		return false, true
	case "xhtml", "application/xhtml+xml":
		return true, true
	}
	return false, false
}

func (f *xmlFeed) startPost(xhtml bool, base *url.URL) {
	f.capture, f.captureDepth = capturePost, len(f.stack)
	f.post.Reset()
	f.postXHTML, f.postBase = xhtml, base
}

// writePost appends to the post being captured, within the feed's post
// budget.
func (f *xmlFeed) writePost(s string) {
	if room := f.posts.room() - f.post.Len(); len(s) > room {
		s, f.posts.cut = s[:max(room, 0)], true
	}
	f.post.WriteString(s)
}

// postTag writes an element met inside a post back out as a start tag.
// An href under an xml:base set inside the post (base differs from the
// post's own) is made absolute here, as the HTML reader knows one base.
func (f *xmlFeed) postTag(t xml.StartElement, local string, base *url.URL) {
	var b strings.Builder
	b.WriteString("<" + local)
	for _, a := range t.Attr {
		name := strings.ToLower(a.Name.Local)
		if a.Name.Space == "xmlns" || name == "xmlns" || a.Name.Space == xmlNamespace || a.Name.Space == "xml" {
			continue
		}
		v := a.Value
		if name == "href" && base != f.postBase && base != nil {
			if u := resolve(base, v); u != nil {
				v = u.String()
			}
		}
		b.WriteString(" " + name + `="` + html.EscapeString(v) + `"`)
	}
	b.WriteString(">")
	f.writePost(b.String())
}

// endPost ends the post being captured and keeps it for the item's end,
// when the item's link (the base of its relative links) is known.
func (f *xmlFeed) endPost() {
	if f.capture != capturePost {
		return
	}
	f.capture = captureNone
	src := f.post.String()
	f.post.Reset()
	if src != "" {
		f.posts.left -= len(src) // charged now: the budget bounds what is held too
		f.itemPosts = append(f.itemPosts, itemPost{src, f.postBase})
	}
}

func isFeedRoot(local string) bool {
	switch strings.ToLower(local) {
	case "rss", "rdf", "feed":
		return true
	}
	return false
}

func isFeedParent(p string) bool {
	switch p {
	case "channel", "feed", "item", "entry":
		return true
	}
	return false
}

func (f *xmlFeed) startCapture(k captureKind) {
	f.capture, f.captureDepth = k, len(f.stack)
	f.text.Reset()
}

func (f *xmlFeed) end() {
	depth := len(f.stack)
	if depth == 0 {
		return
	}
	top := f.stack[depth-1]
	if f.capture == capturePost && depth > f.captureDepth {
		f.writePost("</" + top.local + ">")
	}
	if f.capture != captureNone && depth == f.captureDepth {
		switch f.capture {
		case capturePost:
			f.endPost()
		case captureLink:
			f.addLink(f.text.String(), top.base)
		case captureGUID:
			// Many feeds put ids ("12345", "tag:…") in <guid> without
			// isPermaLink="false": only an absolute http(s) URL counts.
			if g := strings.TrimSpace(f.text.String()); isAbsoluteHTTP(g) {
				if f.inItem {
					f.links = append(f.links, pendingLink{g, nil, true})
				} else {
					f.col.add(g, nil, false, nil)
				}
			}
		case captureTitle:
			t := f.text.String()
			if f.titleHTML {
				t = html.UnescapeString(stripTags(t))
			}
			f.title += " " + t
		}
		f.capture = captureNone
		f.text.Reset()
	}
	if f.inItem && depth == f.itemDepth {
		f.endItem()
	}
	f.stack = f.stack[:depth-1]
}

// addLink records a link of the open item, or of the feed itself.
func (f *xmlFeed) addLink(href string, base *url.URL) {
	if f.inItem {
		f.links = append(f.links, pendingLink{href, base, false})
		return
	}
	f.col.add(href, base, false, nil)
}

// endItem hands the open item's links to the collector with its title's
// words, then its posts' links. It also runs at the end of input, so that
// an item (and a post) cut off by the size cap still counts.
func (f *xmlFeed) endItem() {
	if !f.inItem {
		return
	}
	f.endPost()
	f.inItem = false
	words := Words(f.title, data.MaxWordsPerLink)
	for _, l := range f.links {
		f.col.add(l.href, l.base, false, words)
	}
	if len(f.itemPosts) > 0 {
		permalink := f.permalink()
		for _, p := range f.itemPosts {
			base := p.base
			if base == nil {
				base = permalink
			}
			// readFragment charges nothing more: endPost did.
			f.posts.rd.readFragment(p.html, base, f.col)
		}
	}
	f.links, f.itemPosts = f.links[:0], f.itemPosts[:0]
}

// permalink is the open item's own address: its first <link>, else its
// first permalink <guid>, resolved; nil when it has neither.
func (f *xmlFeed) permalink() *url.URL {
	for _, guid := range []bool{false, true} {
		for _, l := range f.links {
			if l.guid != guid {
				continue
			}
			b := l.base
			if b == nil {
				b = f.feedURL
			}
			if u := absolute(b, l.href); u != nil {
				return u
			}
		}
	}
	return nil
}

func isAbsoluteHTTP(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// stripTags removes markup from an HTML title (Atom type="html"), roughly:
// enough for link words, which keep only letters anyway.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
			b.WriteByte(' ')
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}
