package page

import (
	"errors"
	"io"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		ct         string
		advertised bool
		want       Kind
	}{
		{"text/html", false, HTML},
		{"text/html; charset=utf-8", false, HTML},
		{"TEXT/HTML;charset=ISO-8859-1", false, HTML},
		{"text/html;;charset=utf-8", false, HTML},
		{"application/xhtml+xml", false, HTML},
		{"text/html", true, HTML},
		{"application/rss+xml", true, Feed},
		{"application/rss+xml", false, Other},
		{"application/atom+xml; charset=utf-8", true, Feed},
		{"application/feed+json", true, Feed},
		{"application/json", true, Feed},
		{"application/json", false, Other},
		{"text/xml", true, Feed},
		{"application/xml", true, Feed},
		{"application/rdf+xml", true, Feed},
		{"text/plain", true, Other},
		{"image/png", false, Other},
		{"application/pdf", false, Other},
		{"", false, Other},
		{"garbage", false, Other},
	} {
		if got := Classify(tc.ct, tc.advertised); got != tc.want {
			t.Errorf("Classify(%q, %v) = %v, want %v", tc.ct, tc.advertised, got, tc.want)
		}
	}
}

func TestSkip(t *testing.T) {
	for _, tc := range []struct {
		u    string
		want bool
	}{
		{"https://a.example/", false},
		{"https://a.example/page", false},
		{"https://a.example/page.html", false},
		{"https://a.example/index.php?x=1.pdf", false},
		{"https://a.example/feed.xml", true},
		{"https://a.example/feed.json", true},
		{"https://a.example/index.rss", true},
		{"https://a.example/v1.2/", false},
		{"https://a.example/photo.JPG", true},
		{"https://a.example/doc.pdf", true},
		{"https://a.example/doc.pdf?download=1", true},
		{"https://a.example/a.tar.gz", true},
		{"https://a.example/song.mp3", true},
		{"https://a.example/font.woff2", true},
		{"https://a.example/app.js", true},
		{"https://a.example/style.css", true},
		{"https://a.example/setup.exe", true},
		{"https://a.example/sheet.xlsx", true},
		{"https://a.example/file%2Epdf", true},
		{"https://a.example/dir.pdf/", false},
		{"https://a.example/.htaccess", false},
		{"https://a.example/name.someverylongext", false},
	} {
		if got := Skip(mustURL(t, tc.u)); got != tc.want {
			t.Errorf("Skip(%s) = %v, want %v", tc.u, got, tc.want)
		}
	}
	if !Skip(nil) {
		t.Error("Skip(nil) = false")
	}
}

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		text  string
		limit int
		want  []string
	}{
		{"", 0, nil},
		{"Hello, World!", 0, []string{"hello", "world"}},
		{"the and of", 0, nil},
		{"Read more", 0, nil},
		{"a b c dd", 0, []string{"dd"}},
		{"one two three four", 2, []string{"one", "two"}},
		{"Dup dup DUP", 0, []string{"dup"}},
		{"snake_case kebab-case camelCase", 0, []string{"snake", "case", "kebab", "camelcase"}},
		{"\xff\xfeinvalid\xffutf", 0, []string{"invalid", "utf"}},
		{"İstanbul", 0, []string{"istanbul"}},
		{strings.Repeat("x", 33) + " ok", 0, []string{"ok"}},
		{strings.Repeat("y", 32), 0, []string{strings.Repeat("y", 32)}},
	} {
		if got := Words(tc.text, tc.limit); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Words(%q, %d) = %q, want %q", tc.text, tc.limit, got, tc.want)
		}
	}
}

func TestResolve(t *testing.T) {
	base := mustURL(t, "https://www.example.com/a/b.html")
	for _, tc := range []struct{ href, want string }{
		{"c.html", "https://www.example.com/a/c.html"},
		{"//x.example", "https://x.example/"},
		{"http://X.Example:8080/p#f", "http://x.example:8080/p"},
		{"https://[2001:DB8::1]:443/", "https://[2001:db8::1]:443/"},
		{"https://bücher.example/", "https://xn--bcher-kva.example/"},
		{"https://BÜCHER.example/", "https://xn--bcher-kva.example/"},
		{"https://xn--bcher-kva.example/", "https://xn--bcher-kva.example/"},
		{"https:///nohost", ""},
		{"https://:80/", ""},
		{"javascript:alert(1)", ""},
		{"mailto:a@b.example", ""},
		{"http:", ""},
		{"\t\n", "https://www.example.com/a/b.html"},
		{"%zz", ""},
	} {
		got := ""
		if u := resolve(base, tc.href); u != nil {
			got = u.String()
		}
		if got != tc.want {
			t.Errorf("resolve(%q) = %q, want %q", tc.href, got, tc.want)
		}
	}
	if u := resolve(nil, "/relative"); u != nil {
		t.Errorf("resolve(nil, relative) = %v", u)
	}
}

func TestCapReader(t *testing.T) {
	for _, tc := range []struct {
		in        string
		max       int
		read      string
		truncated bool
	}{
		{"", 4, "", false},
		{"abcd", 4, "abcd", false},
		{"abcde", 4, "abcd", true},
		{"abc", 4, "abc", false},
	} {
		c := newCapReader(iotest.OneByteReader(strings.NewReader(tc.in)), tc.max)
		b, err := io.ReadAll(c)
		if err != nil || string(b) != tc.read || c.truncated != tc.truncated || c.n != len(tc.read) {
			t.Errorf("cap %q at %d: read %q (err %v) truncated %v n %d; want %q truncated %v",
				tc.in, tc.max, b, err, c.truncated, c.n, tc.read, tc.truncated)
		}
	}
	boom := errors.New("boom")
	c := newCapReader(io.MultiReader(strings.NewReader("ab"), iotest.ErrReader(boom)), 10)
	if _, err := io.ReadAll(c); !errors.Is(err, boom) || !errors.Is(c.err, boom) {
		t.Errorf("read error: got %v, recorded %v", err, c.err)
	}
}

// TestReadErrorKeepsLinks: a body that fails midway gives the links before
// the failure and the error.
func TestReadErrorKeepsLinks(t *testing.T) {
	boom := errors.New("connection reset")
	body := io.MultiReader(strings.NewReader(`<a href="https://a.example/">A</a><a href="https://b.example/">B</a>`),
		iotest.ErrReader(boom))
	p, err := ReadHTML(body, "text/html", mustURL(t, "https://www.example.com/"))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want %v", err, boom)
	}
	if len(p.Links) != 2 {
		t.Errorf("links = %v", p.Links)
	}
	body = io.MultiReader(strings.NewReader(`<rss><channel><link>https://a.example/</link>`), iotest.ErrReader(boom))
	p, err = ReadFeed(body, "", mustURL(t, "https://www.example.com/feed"))
	if !errors.Is(err, boom) || len(p.Links) != 1 {
		t.Errorf("feed: err %v, links %v", err, p.Links)
	}
}

// TestCapHTMLGenerated: the cap counts decoded bytes, so a page in a
// two-byte encoding is cut at the same text as its UTF-8 twin would be,
// and a link straddling the cap is not taken whole.
func TestCapDecodedBytes(t *testing.T) {
	r := &Reader{MaxBytes: 100}
	page := `<a href="https://a.example/">A</a>` + strings.Repeat(" ", 40) + `<a href="https://b.example/">B</a>`
	p, err := r.ReadHTML(strings.NewReader(page), "text/html", nil)
	if err != nil || !p.Truncated || p.Bytes != 100 {
		t.Fatalf("err %v truncated %v bytes %d", err, p.Truncated, p.Bytes)
	}
	if len(p.Links) != 1 || p.Links[0].URL.Host != "a.example" {
		t.Errorf("links %v", p.Links)
	}
}
