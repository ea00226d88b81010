package page

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/text/encoding/htmlindex"

	"github.com/mapthenet/mapthenet/internal/casetest"
)

// The page-reading cases (testdata/html/*.txt, testdata/feed/*.txt) and the
// X-Robots-Tag cases (testdata/xrobots.txt), in internal/casetest's format.
// A page case is:
//
//	# comments
//	read-html|read-feed url=URL [encode=CHARSET] [pad=N] [max-links=N] [token=NAME]
//	HTTP/1.1 200 OK                     the response that brought the page:
//	Content-Type: text/html; charset=…  (default text/html for read-html)
//	X-Robots-Tag: noindex               (repeatable), for Effective
//	                                    a blank line, then the document
//	<the document, written in UTF-8>
//	----
//	<what was read>
//
// encode: the document is encoded in that charset before it is read. pad:
// <!--PAD--> is replaced with that many bytes of filler. max-links and
// token set Reader.MaxLinks and Reader.Token. The output lists the page
// flags, then verification tokens, feeds and links, then what Effective
// makes of them under the X-Robots-Tag values. After a deliberate change:
// go test ./crawl/page -run Cases -update.

func TestReadHTMLCases(t *testing.T) { casetest.Run(t, "testdata/html/*.txt", pageCases) }
func TestReadFeedCases(t *testing.T) { casetest.Run(t, "testdata/feed/*.txt", pageCases) }

func pageCases(t *testing.T) casetest.Runner {
	return func(t *testing.T, d *casetest.TestData) string {
		c := loadCase(t, d)
		var p *Page
		var err error
		switch d.Cmd {
		case "read-html":
			ct := c.contentType
			if ct == "" {
				ct = "text/html"
			}
			p, err = c.reader.ReadHTML(strings.NewReader(c.input), ct, c.url)
		case "read-feed":
			p, err = c.reader.ReadFeed(strings.NewReader(c.input), c.contentType, c.url)
		}
		if p == nil {
			d.Fatalf(t, "nil Page (err %v)", err)
		}
		return format(p, err, c.reader.ParseXRobotsTag(c.xrobots))
	}
}

// pageCase is what a read-html or read-feed command reads.
type pageCase struct {
	input       string // the document's bytes
	url         *url.URL
	contentType string
	reader      Reader
	xrobots     []string
}

func loadCase(t testing.TB, d *casetest.TestData) *pageCase {
	if d.Cmd != "read-html" && d.Cmd != "read-feed" {
		d.Fatalf(t, "unknown command %q: want read-html or read-feed", d.Cmd)
	}
	c := &pageCase{}
	var encode, rawURL string
	var pad int
	d.MaybeScanArgs(t, "url", &rawURL)
	d.MaybeScanArgs(t, "encode", &encode)
	d.MaybeScanArgs(t, "pad", &pad)
	d.MaybeScanArgs(t, "max-links", &c.reader.MaxLinks)
	d.MaybeScanArgs(t, "token", &c.reader.Token)
	var err error
	if c.url, err = url.Parse(rawURL); err != nil {
		d.Fatalf(t, "url: %v", err)
	}
	msg := casetest.Text(d)
	if !strings.Contains(msg, "\n\n") {
		msg += "\n" // no document: the blank line that ends the header
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(msg)), nil)
	if err != nil {
		d.Fatalf(t, "not an HTTP response: %v", err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	c.input = string(body)
	c.contentType = resp.Header.Get("Content-Type")
	c.xrobots = resp.Header.Values("X-Robots-Tag")
	if pad > 0 {
		c.input = strings.Replace(c.input, "<!--PAD-->", filler(pad), 1)
	}
	if encode != "" {
		enc, err := htmlindex.Get(encode)
		if err != nil {
			d.Fatalf(t, "encode: %v", err)
		}
		if c.input, err = enc.NewEncoder().String(c.input); err != nil {
			d.Fatalf(t, "encode: %v", err)
		}
	}
	return c
}

// filler is n bytes of harmless markup, on one line and without quotes so
// that it also fits inside a JSON string.
func filler(n int) string {
	const unit = "<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p> "
	s := strings.Repeat(unit, n/len(unit)+1)
	return s[:n]
}

// format renders what was read, one fact a line.
func format(p *Page, err error, header Directives) string {
	var b strings.Builder
	fmt.Fprintf(&b, "page: noindex=%v nofollow=%v truncated=%v capped=%v\n", p.NoIndex, p.NoFollow, p.Truncated, p.LinksCapped)
	if err != nil {
		fmt.Fprintf(&b, "error: %v\n", err)
	}
	for _, v := range p.Verification {
		fmt.Fprintf(&b, "verification: %s\n", v)
	}
	for _, f := range p.Feeds {
		fmt.Fprintf(&b, "feed: %s\n", f)
	}
	for _, l := range p.Links {
		b.WriteString(fmtLink("link", l))
	}
	e := p.Effective(header)
	fmt.Fprintf(&b, "effective: noindex=%v nofollow=%v edges=%d nofollow-edges=%d follow=%d feeds=%d\n",
		e.NoIndex, e.NoFollow, len(e.Edges), countNofollow(e.Edges), len(e.Follow), len(e.Feeds))
	return b.String()
}

func fmtLink(tag string, l Link) string {
	s := tag + ": " + l.URL.String()
	if l.Nofollow {
		s += " nofollow"
	}
	if len(l.Words) > 0 {
		s += " | " + strings.Join(l.Words, " ")
	}
	return s + "\n"
}

func countNofollow(ls []Link) int {
	n := 0
	for _, l := range ls {
		if l.Nofollow {
			n++
		}
	}
	return n
}
