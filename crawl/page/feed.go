package page

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/url"

	"golang.org/x/net/html/charset"
	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// ReadFeed reads a feed with a zero Reader (the defaults).
func ReadFeed(r io.Reader, contentType string, feedURL *url.URL) (*Page, error) {
	return (&Reader{}).ReadFeed(r, contentType, feedURL)
}

// ReadFeed reads an RSS (2.0 or 1.0), Atom or JSON Feed document from r,
// served with contentType from feedURL, and returns its links: the feed's
// own site link and each item's links, with the item's title as link
// words, and the links inside each item's post (its HTML content, read as
// ReadHTML reads a page's links: see postBudget and the package doc). The format is told from the content (JSON starts with '{'), not
// from the media type, which servers often get wrong. It streams with
// encoding/xml or encoding/json and reads at most MaxBytes of decoded
// content. The Page is never nil; err says why reading stopped early (the
// body's read error, or a document that is not a feed or not well formed),
// and the Page then holds the links read before that. A feed cut at
// MaxBytes is not an error.
func (rd *Reader) ReadFeed(r io.Reader, contentType string, feedURL *url.URL) (*Page, error) {
	p := &Page{URL: feedURL}
	br := bufio.NewReaderSize(r, 4096)
	src, decoded := feedDecoder(br, contentType)
	cr := newCapReader(src, rd.maxBytes())
	in := bufio.NewReaderSize(cr, 4096)
	col := newCollector(rd.maxLinks())
	posts := &postBudget{rd: rd, col: col, left: rd.maxBytes()}

	var err error
	switch first := firstByte(in); first {
	case 0:
		// Nothing but white space (or nothing at all).
	case '{':
		err = readJSONFeed(in, feedURL, posts)
	case '<':
		err = readXMLFeed(in, decoded, feedURL, posts)
	default:
		err = fmt.Errorf("not a feed: content starts with %q", first)
	}
	p.Links = col.links(feedURL)
	p.LinksCapped = col.capped
	p.Truncated = cr.truncated || posts.cut
	p.Bytes = cr.n
	switch {
	case cr.err != nil:
		err = cr.err
	case cr.truncated:
		// The cut leaves the document unfinished; that is expected.
		err = nil
	}
	if err != nil {
		err = fmt.Errorf("reading feed: %w", err)
	}
	return p, err
}

// feedDecoder picks the decoding of a feed's bytes: a byte order mark
// first, then the Content-Type charset. decoded is false when neither
// said anything, and the XML declaration then decides (XML's own rule).
func feedDecoder(br *bufio.Reader, contentType string) (src io.Reader, decoded bool) {
	head, _ := br.Peek(3)
	switch {
	case bytes.HasPrefix(head, []byte("\xef\xbb\xbf")):
		br.Discard(3)
		return br, true
	case bytes.HasPrefix(head, []byte("\xff\xfe")), bytes.HasPrefix(head, []byte("\xfe\xff")):
		dec := unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder()
		return transform.NewReader(br, dec), true
	}
	if _, params, err := mime.ParseMediaType(contentType); err == nil {
		if cs := params["charset"]; cs != "" {
			if enc, name := charset.Lookup(cs); enc != nil {
				if name == "utf-8" {
					return br, true
				}
				return transform.NewReader(br, enc.NewDecoder()), true
			}
		}
	}
	return br, false
}

// firstByte skips leading white space and returns the next byte without
// consuming it; 0 at the end of input.
func firstByte(r *bufio.Reader) byte {
	for {
		b, err := r.Peek(1)
		if err != nil {
			return 0
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			r.Discard(1)
		default:
			return b[0]
		}
	}
}

var errNotFeed = errors.New("not a feed")

// postBudget reads the posts (the HTML content of items) of one feed and
// bounds them: at most MaxBytes of post HTML in all, the feed's own cap.
// The feed's body is already capped, and a post's HTML decoded from it
// (entities, CDATA) is no longer than its source; the budget makes sure of
// it whatever the form (XHTML is written back out as markup), so a feed's
// posts count towards the cap of the feed that carries them instead of each
// adding its own. What is past the budget is not read (Page.Truncated).
type postBudget struct {
	rd   *Reader
	col  *collector
	left int  // bytes of post HTML still to read
	cut  bool // some post HTML was left unread
}

// room is how many more bytes of post HTML may be taken.
func (b *postBudget) room() int { return b.left }

// clip cuts s to the room left, noting the cut.
func (b *postBudget) clip(s string) string {
	if len(s) > b.left {
		s, b.cut = s[:b.left], true
	}
	return s
}

// read takes one post's HTML (already within room) and collects its links
// under base (nil: the feed's address).
func (b *postBudget) read(src string, base *url.URL) {
	if src == "" {
		return
	}
	b.left -= len(src)
	b.rd.readFragment(src, base, b.col)
}
