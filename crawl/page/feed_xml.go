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
//
// A <link> with an href attribute (Atom) counts when its rel is absent or
// "alternate"; one without href (RSS) has the URL as its text. xml:base
// applies to Atom hrefs and RSS texts alike, inherited down the tree.
func readXMLFeed(r io.Reader, decoded bool, feedURL *url.URL, col *collector) error {
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
	f := &xmlFeed{col: col, feedURL: feedURL}
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
			if f.capture != captureNone {
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
)

type xmlFeed struct {
	col     *collector
	feedURL *url.URL
	sawRoot bool

	stack []xmlElem

	// The open item (RSS <item> or Atom <entry>), if any.
	inItem    bool
	itemDepth int
	links     []pendingLink
	title     string

	// Text being captured, and the depth of the element it belongs to.
	capture      captureKind
	captureDepth int
	titleHTML    bool
	text         strings.Builder
}

type xmlElem struct {
	local string
	base  *url.URL // in-scope xml:base; nil: the feed's address
}

type pendingLink struct {
	href string
	base *url.URL
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
	if f.capture != captureNone {
		return // markup inside a captured text (an XHTML title): keep its text
	}
	switch local {
	case "item", "entry":
		// An item opening inside an open one means the open one was never
		// closed (sloppy RSS): end it here rather than merge the two.
		f.endItem()
		f.inItem, f.itemDepth = true, len(f.stack)
		f.links, f.title = f.links[:0], ""
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
	if f.capture != captureNone && depth == f.captureDepth {
		switch f.capture {
		case captureLink:
			f.addLink(f.text.String(), top.base)
		case captureGUID:
			// Many feeds put ids ("12345", "tag:…") in <guid> without
			// isPermaLink="false": only an absolute http(s) URL counts.
			if g := strings.TrimSpace(f.text.String()); isAbsoluteHTTP(g) {
				f.addLink(g, nil)
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
		f.links = append(f.links, pendingLink{href, base})
		return
	}
	f.col.add(href, base, false, nil)
}

// endItem hands the open item's links to the collector with its title's
// words. It also runs at the end of input, so that an item cut off by the
// size cap still counts.
func (f *xmlFeed) endItem() {
	if !f.inItem {
		return
	}
	f.inItem = false
	words := Words(f.title, data.MaxWordsPerLink)
	for _, l := range f.links {
		f.col.add(l.href, l.base, false, words)
	}
	f.links = f.links[:0]
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
