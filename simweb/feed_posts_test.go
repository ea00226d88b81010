package simweb

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"testing"

	feedpage "github.com/mapthenet/mapthenet/crawl/page"
)

// feed-posts.example's only out-links are inside its feeds' posts: its
// HTML pages and its feed items link the site itself, nothing else.
func TestFeedPostsOnlyLinks(t *testing.T) {
	w := newWeb(t, Config{Seed: 1, Sites: 10})
	s := w.world.byName["feed-posts.example"]
	h := s.primary
	posts := 0
	for path, p := range h.pages {
		var ls []link
		if p.kind == pageHTML {
			ls = p.links()
		} else {
			ls = p.items
			posts += len(p.posts)
		}
		for _, l := range ls {
			if l.site != s {
				t.Errorf("%s links %s outside its posts", path, l.host)
			}
		}
	}
	if posts != 5 {
		t.Errorf("%d posts, want 5", posts)
	}
	var external int
	for _, e := range w.ExpectedEdges() {
		if e.Src == s.Domain {
			external++
			if !e.FromFeed {
				t.Errorf("edge %s -> %s not from a feed", e.Src, e.Dst)
			}
		}
	}
	if external != 6 {
		t.Errorf("%d edges from %s, want 6", external, s.Domain)
	}
	for _, want := range []struct{ path, text string }{
		{"/feed.xml", "<description>&lt;p&gt;A post."},
		{"/feed.xml", "<content:encoded><![CDATA[<p>A post."},
		{"/atom.xml", `<content type="html" xml:base="`},
		{"/atom.xml", `<summary type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><p>A post.`},
		{"/feed.json", `"content_html":"<p>A post.`},
	} {
		body, _ := h.pages[want.path].rendered(false)
		if !bytes.Contains(body, []byte(want.text)) {
			t.Errorf("%s does not hold %q:\n%s", want.path, want.text, body)
		}
	}
}

// What the model says each feed links (items and posts, with rel flags) is
// what the crawler's own feed reader reads from the rendered feed.
func TestFeedModelAgreesWithReader(t *testing.T) {
	w := newWeb(t, Config{Seed: 2, Sites: 30, SpecialShare: 0.3})
	n := 0
	for _, h := range w.world.byHost {
		for path, p := range h.pages {
			if p.kind != pageRSS && p.kind != pageAtom && p.kind != pageJSONFeed {
				continue
			}
			n++
			want := map[string]bool{} // host+path -> nofollow
			for _, l := range p.links() {
				k := l.host + l.path
				nf, seen := want[k]
				want[k] = l.relNofollow() && (!seen || nf)
			}
			body, _ := p.rendered(false)
			u, _ := url.Parse(h.origin() + path)
			pg, err := feedpage.ReadFeed(bytes.NewReader(body), p.ctype, u)
			if err != nil {
				t.Fatalf("%s%s: %v", h.name, path, err)
			}
			got := map[string]bool{}
			for _, l := range pg.Links {
				got[strings.ToLower(l.URL.Host)+l.URL.RequestURI()] = l.Nofollow
			}
			if !mapsEqual(got, want) {
				t.Errorf("%s%s: reader %v, model %v", h.name, path, sortedKeys(got), sortedKeys(want))
			}
		}
	}
	if n == 0 {
		t.Fatal("no feeds")
	}
}

func mapsEqual(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			k += " nofollow"
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
