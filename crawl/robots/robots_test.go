package robots

import (
	"bytes"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestNormalise(t *testing.T) {
	tests := []struct {
		in      string
		pattern bool
		want    string
	}{
		// RFC 9309 section 2.2.2's table ("Path to match" column).
		{"/foo/bar?baz=quz", false, "/foo/bar?baz=quz"},
		{"/foo/bar/ツ", false, "/foo/bar/%E3%83%84"},
		{"/foo/bar/%E3%83%84", false, "/foo/bar/%E3%83%84"},
		{"/foo/bar/%62%61%7A", false, "/foo/bar/baz"},
		// Hex case, reserved characters kept encoded.
		{"/a%2fb%3d", false, "/a%2Fb%3D"},
		{"/%7e%2D%2e%5F", false, "/~-._"},
		// Stray "%".
		{"/100%", false, "/100%25"},
		{"/%zz", false, "/%25zz"},
		{"/%4", false, "/%254"},
		// Controls and spaces.
		{"/a b\t\x7f", false, "/a%20b%09%7F"},
		// "*" and "$": special in a pattern only.
		{"/a*b$c$", false, "/a%2Ab%24c%24"},
		{"/a*b$c$", true, "/a*b%24c$"},
		{"/a***b**", true, "/a*b*"},
		{"/a%2A", true, "/a%2A"},
		{"*", true, "*"},
		{"$", true, "$"},
		{"", false, ""},
	}
	for _, tt := range tests {
		if got := normalise(tt.in, tt.pattern); got != tt.want {
			t.Errorf("normalise(%q, %v) = %q, want %q", tt.in, tt.pattern, got, tt.want)
		}
		// Normalising twice changes nothing more.
		if got := normalise(normalise(tt.in, tt.pattern), tt.pattern); got != tt.want {
			t.Errorf("normalise twice (%q, %v) = %q, want %q", tt.in, tt.pattern, got, tt.want)
		}
	}
}

// TestGlobMatchAgainstRegexp compares the matcher with the regular
// expression a pattern stands for, over every short pattern and path made of
// a few letters.
func TestGlobMatchAgainstRegexp(t *testing.T) {
	alphabet := []string{"a", "b", "*"}
	var patterns []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		patterns = append(patterns, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 5)
	var paths []string
	var growPath func(prefix string, n int)
	growPath = func(prefix string, n int) {
		paths = append(paths, prefix)
		if n > 0 {
			growPath(prefix+"a", n-1)
			growPath(prefix+"b", n-1)
		}
	}
	growPath("", 6)
	for _, p := range patterns {
		for _, anchored := range []bool{false, true} {
			re := "^" + strings.ReplaceAll(regexp.QuoteMeta(p), `\*`, ".*")
			if anchored {
				re += "$"
			}
			rx := regexp.MustCompile(re)
			for _, s := range paths {
				if got, want := globMatch(p, s, anchored), rx.MatchString(s); got != want {
					t.Fatalf("globMatch(%q, %q, %v) = %v, want %v", p, s, anchored, got, want)
				}
			}
		}
	}
}

func TestLimit(t *testing.T) {
	line := func(n int) []byte { return append(bytes.Repeat([]byte("x"), n-1), '\n') }
	tests := []struct {
		name          string
		body          []byte
		wantLen       int
		wantTruncated bool
	}{
		{"short", line(10), 10, false},
		{"exactly the limit", line(MaxBytes), MaxBytes, false},
		{"one line past the limit", append(line(MaxBytes-5), line(10)...), MaxBytes - 5, true},
		{"line ends at the limit", append(line(MaxBytes), line(10)...), MaxBytes, true},
		{"CR at the limit", append(append(bytes.Repeat([]byte("x"), MaxBytes), '\r'), line(10)...), MaxBytes, true},
		{"one huge line", bytes.Repeat([]byte("x"), MaxBytes+1), 0, true},
	}
	for _, tt := range tests {
		got, truncated := limit(tt.body)
		if len(got) != tt.wantLen || truncated != tt.wantTruncated {
			t.Errorf("%s: limit = %d bytes, truncated %v; want %d, %v", tt.name, len(got), truncated, tt.wantLen, tt.wantTruncated)
		}
		if r := Parse(tt.body); r.Truncated() != tt.wantTruncated {
			t.Errorf("%s: Truncated() = %v", tt.name, r.Truncated())
		}
	}
}

func TestFromStatus(t *testing.T) {
	body := []byte("User-agent: *\nDisallow: /private\n")
	tests := []struct {
		status        int
		wantAvailable bool
		wantPrivate   bool // /private allowed
		wantHome      bool // / allowed
	}{
		{200, true, false, true},
		{204, true, true, true}, // a 2xx with whatever body: parsed
		{301, false, false, false},
		{400, true, true, true},
		{401, true, true, true},
		{403, true, true, true},
		{404, true, true, true},
		{410, true, true, true},
		{429, false, false, false},
		{500, false, false, false},
		{503, false, false, false},
		{0, false, false, false},
		{102, false, false, false},
		{600, false, false, false},
	}
	for _, tt := range tests {
		b := body
		if tt.status == 204 {
			b = nil
		}
		r, available := FromStatus(tt.status, b)
		if r == nil {
			t.Fatalf("FromStatus(%d): nil Robots", tt.status)
		}
		g := r.Group("MapTheNetBot")
		if available != tt.wantAvailable || g.Allowed("/private") != tt.wantPrivate || g.Allowed("/") != tt.wantHome {
			t.Errorf("FromStatus(%d): available %v, /private %v, / %v; want %v, %v, %v", tt.status,
				available, g.Allowed("/private"), g.Allowed("/"), tt.wantAvailable, tt.wantPrivate, tt.wantHome)
		}
		if !g.Allowed("/robots.txt") {
			t.Errorf("FromStatus(%d): /robots.txt disallowed", tt.status)
		}
	}
}

func TestPathOf(t *testing.T) {
	tests := map[string]string{
		"https://example.com":                 "/",
		"https://example.com/":                "/",
		"https://example.com/a/b?c=d#e":       "/a/b?c=d",
		"https://example.com/a%2Fb?":          "/a%2Fb?",
		"https://example.com/caf%C3%A9":       "/caf%C3%A9",
		"https://example.com/café":            "/caf%C3%A9",
		"http://example.com:8080/x?y=1&z=%20": "/x?y=1&z=%20",
		"http:opaque":                         "/opaque",
	}
	for in, want := range tests {
		u, err := url.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := PathOf(u); got != want {
			t.Errorf("PathOf(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGroupNeverNil(t *testing.T) {
	for _, r := range []*Robots{Parse(nil), AllowAll(), DisallowAll(), Parse([]byte("User-agent: x\n"))} {
		for _, tok := range []string{"", "*", "MapTheNetBot", "x", "123", " "} {
			if r.Group(tok) == nil {
				t.Fatalf("Group(%q) = nil", tok)
			}
		}
	}
}

func TestDisallowAll(t *testing.T) {
	r := DisallowAll()
	if !r.OptedOut("MapTheNetBot") || !r.OptedOut("*") {
		t.Error("DisallowAll lets a token in")
	}
	if d, ok := r.Group("x").CrawlDelay(); ok || d != 0 {
		t.Errorf("DisallowAll has a crawl-delay %v", d)
	}
}

func TestSitemapsIsACopy(t *testing.T) {
	r := Parse([]byte("Sitemap: https://example.com/s.xml\n"))
	s := r.Sitemaps()
	s[0] = "changed"
	if r.Sitemaps()[0] != "https://example.com/s.xml" {
		t.Error("Sitemaps returns the Robots' own slice")
	}
}

func TestParseDelay(t *testing.T) {
	tests := map[string]time.Duration{
		"1":         time.Second,
		"1.5":       1500 * time.Millisecond,
		"0.001":     time.Millisecond,
		"86400":     MaxCrawlDelay,
		"100000000": MaxCrawlDelay,
	}
	for in, want := range tests {
		if got, ok := parseDelay(in); !ok || got != want {
			t.Errorf("parseDelay(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "-1", "+1", "1s", "1e3", "1,5", ". ", "..", "Inf", "NaN", "0x1p3", "1_000"} {
		if d, ok := parseDelay(bad); ok {
			t.Errorf("parseDelay(%q) = %v, want none", bad, d)
		}
	}
}

func TestIsProductToken(t *testing.T) {
	for s, want := range map[string]bool{
		"MapTheNetBot": true, "my-bot_2x": false, "a": true, "-_": true,
		"": false, "Bot2": false, "MapTheNetBot/1.0": false, " bot": false, "bot ": false, "*": false, "bücher": false,
	} {
		if got := IsProductToken(s); got != want {
			t.Errorf("IsProductToken(%q) = %v, want %v", s, got, want)
		}
	}
}
