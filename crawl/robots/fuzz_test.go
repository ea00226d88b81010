package robots

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// seedRobots adds every robots.txt block of testdata/*.txt to f, so that the
// fuzzers start from the cases the tests already know.
func seedRobots(f *testing.F, add func(body string)) {
	files, _ := filepath.Glob("testdata/*.txt")
	for _, file := range files {
		src, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		for _, c := range strings.Split(string(src), "\n=== ")[1:] {
			_, rest, _ := strings.Cut(c, "\n")
			body, _, _ := strings.Cut(rest, "\n---\n")
			add(body + "\n")
		}
	}
	add("\xEF\xBB\xBFUser-agent: *\r\nDisallow: /*a*b*c*d*e$\r\nCrawl-delay: 1.5\r\n")
	add("User-agent: MapTheNetBot\nDisallow: /%\nAllow: /%2\nDisallow: /%zz*$\n")
}

// FuzzParse: Parse never panics, is deterministic, and what it builds
// answers every question without panicking.
func FuzzParse(f *testing.F) {
	seedRobots(f, func(body string) { f.Add([]byte(body)) })
	f.Fuzz(func(t *testing.T, body []byte) {
		r := Parse(body)
		again := Parse(body)
		for _, tok := range []string{"MapTheNetBot", "*", "a", ""} {
			g, g2 := r.Group(tok), again.Group(tok)
			if g == nil {
				t.Fatalf("Group(%q) = nil", tok)
			}
			d, ok := g.CrawlDelay()
			d2, ok2 := g2.CrawlDelay()
			if d != d2 || ok != ok2 || d < 0 || d > MaxCrawlDelay {
				t.Fatalf("CrawlDelay: %v %v, then %v %v", d, ok, d2, ok2)
			}
			if len(g.rules) != len(g2.rules) || g.Source() != g2.Source() {
				t.Fatalf("Parse is not deterministic for %q", tok)
			}
			if !g.Allowed("/robots.txt") {
				t.Fatal("/robots.txt disallowed")
			}
			for _, p := range []string{"/", "/a", "/a?b", "/%E3%83%84"} {
				if g.Allowed(p) != g2.Allowed(p) {
					t.Fatalf("Allowed(%q) differs between two parses", p)
				}
			}
		}
	})
}

// FuzzAllowed: Allowed never panics, is deterministic, and gives the same
// answer for a path and its normalised form.
func FuzzAllowed(f *testing.F) {
	paths := []string{"/", "/a/b?c=d", "/%7Euser", "/café", "/100%", "/a*b$", "/robots.txt", "", "x", "/x#frag"}
	i := 0
	seedRobots(f, func(body string) {
		f.Add(body, paths[i%len(paths)])
		i++
	})
	f.Fuzz(func(t *testing.T, body, path string) {
		r := Parse([]byte(body))
		g := r.Group("MapTheNetBot")
		got := g.Allowed(path)
		if g.Allowed(path) != got {
			t.Fatalf("Allowed(%q) is not deterministic", path)
		}
		p := path
		if j := strings.IndexByte(p, '#'); j >= 0 {
			p = p[:j]
		}
		if !strings.HasPrefix(p, "/") {
			p = "/" + p
		}
		if n := normalise(p, false); g.Allowed(n) != got {
			t.Fatalf("Allowed(%q) = %v but Allowed(%q) = %v", path, got, n, !got)
		}
		if r.OptedOut("MapTheNetBot") && g.Allowed("/") {
			t.Fatal("opted out, yet / allowed")
		}
		if want := referenceAllowed(g, normalise(p, false)); got != want {
			t.Fatalf("Allowed(%q) = %v, the slow reference says %v", path, got, want)
		}
	})
}

// referenceAllowed is RFC 9309's rule read literally and slowly: every rule
// turned into a regular expression, the longest matching pattern wins, Allow
// on a tie.
func referenceAllowed(g *Group, path string) bool {
	if p, _, _ := strings.Cut(path, "?"); p == "/robots.txt" {
		return true
	}
	best, allow := -1, true
	for _, r := range g.rules {
		re := "^" + strings.ReplaceAll(regexp.QuoteMeta(r.pattern), `\*`, ".*")
		if r.anchored {
			re += "$"
		}
		if !regexp.MustCompile("(?s)" + re).MatchString(path) {
			continue
		}
		if r.length > best || (r.length == best && r.allow) {
			best, allow = r.length, r.allow
		}
	}
	return allow
}
