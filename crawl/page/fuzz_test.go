package page

import (
	"bytes"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/html"

	"github.com/mapthenet/mapthenet/internal/casetest"
)

// seedInputs adds the inputs of the data-driven cases under dir to f.
func seedInputs(f *testing.F, dir string, ct string) {
	casetest.Each(f, filepath.Join("testdata", dir, "*.txt"), func(d *casetest.TestData) {
		c := loadCase(f, d)
		if len(c.input) <= 64<<10 { // the padded cap cases would only slow the fuzzer
			f.Add([]byte(c.input), ct)
		}
	})
}

var fuzzBase, _ = url.Parse("https://www.example.com/dir/page.html")

// checkPage asserts what every Page promises, whatever the input.
func checkPage(t *testing.T, p *Page, rd *Reader) {
	t.Helper()
	if p == nil {
		t.Fatal("nil Page")
	}
	if p.Bytes > rd.MaxBytes {
		t.Errorf("read %d bytes, cap %d", p.Bytes, rd.MaxBytes)
	}
	if len(p.Links) > rd.MaxLinks {
		t.Errorf("%d links, cap %d", len(p.Links), rd.MaxLinks)
	}
	seen := map[string]bool{}
	for _, l := range p.Links {
		checkURL(t, l.URL)
		s := l.URL.String()
		if seen[s] {
			t.Errorf("duplicate link %s", s)
		}
		seen[s] = true
		if len(l.Words) > 16 {
			t.Errorf("%d words", len(l.Words))
		}
		for _, w := range l.Words {
			checkWord(t, w)
		}
	}
	for _, u := range p.Feeds {
		checkURL(t, u)
	}
}

func checkURL(t *testing.T, u *url.URL) {
	t.Helper()
	if u == nil {
		t.Fatal("nil URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.Fragment != "" || u.User != nil {
		t.Errorf("bad link %q", u)
	}
	if u.Host != strings.ToLower(u.Host) {
		t.Errorf("host not lower case: %q", u)
	}
	for i := 0; i < len(u.Host); i++ {
		if u.Host[i] >= 0x80 {
			t.Errorf("host not ASCII: %q", u)
			break
		}
	}
	again, err := url.Parse(u.String())
	if err != nil {
		t.Errorf("link %q does not parse again: %v", u, err)
	} else if again.Host != u.Host {
		t.Errorf("link %q parses again with host %q", u, again.Host)
	}
}

func checkWord(t *testing.T, w string) {
	t.Helper()
	n := utf8.RuneCountInString(w)
	if n < MinWordLen || n > MaxWordLen {
		t.Errorf("word %q: %d runes", w, n)
	}
	if isStopword(w) {
		t.Errorf("stopword %q kept", w)
	}
	for i, r := range w {
		if !(unicode.IsLetter(r) || i > 0 && unicode.IsMark(r)) {
			t.Errorf("word %q holds %q", w, r)
		}
	}
	if strings.ToLower(w) != w {
		t.Errorf("word %q not lower case", w)
	}
}

func FuzzReadHTML(f *testing.F) {
	seedInputs(f, "html", "text/html")
	f.Add([]byte(`<a href="x">y</a>`), "text/html; charset=shift_jis")
	f.Add([]byte("\xfe\xff\x00<\x00a"), "text/html")
	f.Add([]byte(`<base href="//h"><a href="../../a?b#c">`), "")
	f.Fuzz(func(t *testing.T, data []byte, ct string) {
		rd := &Reader{MaxBytes: 64 << 10, MaxLinks: 100}
		p, err := rd.ReadHTML(bytes.NewReader(data), ct, fuzzBase)
		if err != nil {
			t.Errorf("error from an in-memory body: %v", err)
		}
		checkPage(t, p, rd)
		checkTagNames(t, data)
	})
}

// checkTagNames: tagName, read from the raw token, agrees with the
// tokenizer's TagName wherever it matters (names shorter than maxTagName).
func checkTagNames(t *testing.T, data []byte) {
	z := html.NewTokenizer(bytes.NewReader(data))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			return
		}
		if tt != html.StartTagToken && tt != html.SelfClosingTagToken && tt != html.EndTagToken {
			continue
		}
		var buf [maxTagName]byte
		got := string(tagName(z.Raw(), tt == html.EndTagToken, &buf))
		want, _ := z.TagName()
		if len(want) < maxTagName && !bytes.ContainsAny(want, "\x00\ufffd") && got != string(want) {
			t.Fatalf("tag %q: tagName %q, TagName %q", z.Raw(), got, want)
		}
	}
}

func FuzzReadFeed(f *testing.F) {
	seedInputs(f, "feed", "")
	f.Add([]byte(`<feed xml:base="//h/"><entry><link href="a"/><title>t</title></entry></feed>`), "application/atom+xml")
	f.Add([]byte(`{"items":[{"url":"/a","title":"T t"}]}`), "application/feed+json")
	f.Add([]byte(`<rss><channel><item><guid>https://g/</guid></item></channel></rss>`), "text/xml; charset=latin1")
	f.Fuzz(func(t *testing.T, data []byte, ct string) {
		rd := &Reader{MaxBytes: 64 << 10, MaxLinks: 100}
		p, _ := rd.ReadFeed(bytes.NewReader(data), ct, fuzzBase)
		checkPage(t, p, rd)
	})
}

func FuzzXRobotsTag(f *testing.F) {
	for _, s := range []string{"noindex", "none", "googlebot: noindex", "mapthenetbot: nofollow",
		"unavailable_after: Wednesday, 03-Nov-2021 15:00:00 GMT, noindex", "a: b: c, d", ":", ",,,"} {
		f.Add(s, "")
		f.Add(s, "googlebot")
	}
	f.Fuzz(func(t *testing.T, v, token string) {
		d := ParseXRobotsTag([]string{v}, token)
		// Another bot's header value never changes what applies to us.
		other := ParseXRobotsTag([]string{v, "zz-otherbot: noindex, nofollow"}, token)
		if strings.EqualFold(strings.TrimSpace(token), "zz-otherbot") {
			return
		}
		if other != d {
			t.Errorf("%q: alone %+v, with another bot's value %+v", v, d, other)
		}
		// More values only add directives.
		more := ParseXRobotsTag([]string{v, v + ", noindex"}, token)
		if d.NoIndex && !more.NoIndex || d.NoFollow && !more.NoFollow {
			t.Errorf("%q: %+v lost in %+v", v, d, more)
		}
		// Meta robots content never panics either.
		_ = parseMetaRobots(v)
	})
}
