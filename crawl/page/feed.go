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
// words. The format is told from the content (JSON starts with '{'), not
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

	var err error
	switch first := firstByte(in); first {
	case 0:
		// Nothing but white space (or nothing at all).
	case '{':
		err = readJSONFeed(in, feedURL, col)
	case '<':
		err = readXMLFeed(in, decoded, feedURL, col)
	default:
		err = fmt.Errorf("not a feed: content starts with %q", first)
	}
	p.Links = col.links(feedURL)
	p.LinksCapped = col.capped
	p.Truncated = cr.truncated
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
