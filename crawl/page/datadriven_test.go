package page

import (
	"bytes"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/text/encoding/htmlindex"
)

var update = flag.Bool("update", false, "rewrite the want sections of testdata/ cases")

// A case file (testdata/html/*.txt, testdata/feed/*.txt) is:
//
//	# comments
//	url: https://example.com/page.html      the page's address
//	content-type: text/html; charset=utf-8  (default text/html or none)
//	encode: shift_jis                       encode the input (written in UTF-8) in this charset
//	pad: 3145728                            replace <!--PAD--> with this many bytes of filler
//	max-links: 3                            Reader.MaxLinks
//	token: otherbot                         Reader.Token
//	x-robots-tag: noindex                   a header value (repeatable), for Effective
//	-- input --
//	the document
//	-- want --
//	what was read (rewritten by go test -update)
//
// The want section lists the page flags, then verification tokens, feeds and
// links, then what Effective makes of them under the X-Robots-Tag values.
type dataCase struct {
	path        string
	head        string // everything up to and including "-- input --\n"
	input       string
	want        string
	url         *url.URL
	contentType string
	reader      Reader
	xrobots     []string
}

const (
	inputMark = "-- input --\n"
	wantMark  = "-- want --\n"
)

func loadCase(t testing.TB, path string) *dataCase {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, inputMark)
	if i < 0 {
		t.Fatalf("%s: no %q line", path, strings.TrimSpace(inputMark))
	}
	c := &dataCase{path: path, head: s[:i+len(inputMark)]}
	rest := s[i+len(inputMark):]
	if j := strings.Index(rest, "\n"+wantMark); j >= 0 {
		c.input, c.want = rest[:j+1], rest[j+1+len(wantMark):]
	} else if strings.HasPrefix(rest, wantMark) {
		c.want = rest[len(wantMark):]
	} else {
		c.input = rest
	}
	var encode string
	pad := 0
	for _, line := range strings.Split(s[:i], "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			t.Fatalf("%s: bad header line %q", path, line)
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "url":
			if c.url, err = url.Parse(v); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
		case "content-type":
			c.contentType = v
		case "encode":
			encode = v
		case "pad":
			if pad, err = strconv.Atoi(v); err != nil {
				t.Fatalf("%s: pad: %v", path, err)
			}
		case "max-links":
			if c.reader.MaxLinks, err = strconv.Atoi(v); err != nil {
				t.Fatalf("%s: max-links: %v", path, err)
			}
		case "token":
			c.reader.Token = v
		case "x-robots-tag":
			c.xrobots = append(c.xrobots, v)
		default:
			t.Fatalf("%s: unknown header %q", path, k)
		}
	}
	if pad > 0 {
		c.input = strings.Replace(c.input, "<!--PAD-->", filler(pad), 1)
	}
	if encode != "" {
		enc, err := htmlindex.Get(encode)
		if err != nil {
			t.Fatalf("%s: encode: %v", path, err)
		}
		if c.input, err = enc.NewEncoder().String(c.input); err != nil {
			t.Fatalf("%s: encode: %v", path, err)
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

func runCases(t *testing.T, dir string, read func(r *Reader, c *dataCase) (*Page, error)) {
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatalf("no cases in testdata/%s", dir)
	}
	for _, path := range paths {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
			c := loadCase(t, path)
			rd := c.reader
			p, err := read(&rd, c)
			if p == nil {
				t.Fatalf("nil Page (err %v)", err)
			}
			got := format(p, err, rd.ParseXRobotsTag(c.xrobots))
			if *update {
				b, rerr := os.ReadFile(path)
				if rerr != nil {
					t.Fatal(rerr)
				}
				s := string(b)
				in := s[len(c.head):]
				if j := strings.Index(in, "\n"+wantMark); j >= 0 {
					in = in[:j+1]
				} else if strings.HasPrefix(in, wantMark) {
					in = ""
				}
				if in != "" && !strings.HasSuffix(in, "\n") {
					in += "\n"
				}
				if err := os.WriteFile(path, []byte(c.head+in+wantMark+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != c.want {
				t.Errorf("%s: got\n%s\nwant\n%s", path, got, c.want)
			}
		})
	}
}

func TestReadHTMLCases(t *testing.T) {
	runCases(t, "html", func(r *Reader, c *dataCase) (*Page, error) {
		ct := c.contentType
		if ct == "" {
			ct = "text/html"
		}
		return r.ReadHTML(bytes.NewReader([]byte(c.input)), ct, c.url)
	})
}

func TestReadFeedCases(t *testing.T) {
	runCases(t, "feed", func(r *Reader, c *dataCase) (*Page, error) {
		return r.ReadFeed(bytes.NewReader([]byte(c.input)), c.contentType, c.url)
	})
}
