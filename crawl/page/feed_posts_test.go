package page

import (
	"bufio"
	"bytes"
	"net/url"
	"strings"
	"testing"
)

// XHTML content is written back out as markup, which can be longer than
// its source ("<b/>" becomes "<b></b>"): the post budget, not the body's
// cap, is what stops it, so a feed's posts never add up to more than
// MaxBytes of HTML to read.
func TestFeedPostBudget(t *testing.T) {
	const max = 4096
	body := `<feed xmlns="http://www.w3.org/2005/Atom"><entry><link href="https://www.example.org/e"/>` +
		`<content type="xhtml"><div xmlns="http://www.w3.org/1999/xhtml"><a href="https://early.example/">early</a>` +
		strings.Repeat("<b/>", 900) +
		`<a href="https://late.example/">late</a></div></content></entry></feed>`
	if len(body) >= max {
		t.Fatalf("the body (%d bytes) must fit the cap for this test", len(body))
	}
	rd := &Reader{MaxBytes: max}
	u, _ := url.Parse("https://www.example.org/atom.xml")
	p, err := rd.ReadFeed(strings.NewReader(body), "application/atom+xml", u)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range p.Links {
		got = append(got, l.URL.String())
	}
	if want := "https://www.example.org/e https://early.example/"; strings.Join(got, " ") != want {
		t.Errorf("links %v, want %s", got, want)
	}
	if !p.Truncated {
		t.Error("a post cut by the budget does not say Truncated")
	}

	// The same feed with a larger cap reads the late link too.
	p, _ = (&Reader{MaxBytes: 16 << 10}).ReadFeed(strings.NewReader(body), "application/atom+xml", u)
	if len(p.Links) != 3 || p.Truncated {
		t.Errorf("with room: %d links, truncated %v", len(p.Links), p.Truncated)
	}
}

// Every post of a feed draws on one budget: many items each under the cap
// cannot together pass it.
func TestFeedPostBudgetShared(t *testing.T) {
	var b strings.Builder
	b.WriteString(`<rss><channel>`)
	for i := 0; i < 20; i++ {
		b.WriteString(`<item><link>https://www.example.org/p</link><description>&lt;a href="https://d` + strings.Repeat("x", i) + `.example/"&gt;x&lt;/a&gt;` +
			strings.Repeat("&lt;i&gt;&lt;/i&gt;", 10) + `</description></item>`)
	}
	b.WriteString(`</channel></rss>`)
	posts := &postBudget{rd: &Reader{}, col: newCollector(100), left: 500}
	u, _ := url.Parse("https://www.example.org/rss")
	if err := readXMLFeed(bufio.NewReader(strings.NewReader(b.String())), true, u, posts); err != nil {
		t.Fatal(err)
	}
	if posts.left < 0 || !posts.cut {
		t.Errorf("budget left %d, cut %v", posts.left, posts.cut)
	}
	// Each post is 27+ bytes of links and 70 of markup: 500 bytes hold 5.
	if n := len(posts.col.links(u)); n < 5 || n > 7 {
		t.Errorf("%d links read within 500 bytes of posts", n)
	}
}

// The post readers never take more than the budget, whatever the input,
// and every link they collect is a valid one.
func FuzzFeedPosts(f *testing.F) {
	seedInputs(f, "feed", "")
	f.Add([]byte(`<rss><channel><item><description>&lt;a href="x"&gt;y&lt;/a&gt;</description><link>/p</link></item></channel></rss>`), "")
	f.Add([]byte(`<feed><entry xml:base="//h/"><content type="xhtml"><div><a href="a"/><b xml:base="../c/"><a href="d">e</a></b></div></content></entry></feed>`), "")
	f.Add([]byte(`{"items":[{"url":"/a","content_html":"<a href=b rel=ugc>c</a>"}]}`), "")
	u, _ := url.Parse("https://www.example.com/dir/feed")
	f.Fuzz(func(t *testing.T, data []byte, _ string) {
		const budget = 2048
		posts := &postBudget{rd: &Reader{MaxLinks: 100}, col: newCollector(100), left: budget}
		in := bufio.NewReader(bytes.NewReader(data))
		switch firstByte(in) {
		case '{':
			_ = readJSONFeed(in, u, posts)
		case '<':
			_ = readXMLFeed(in, true, u, posts)
		default:
			return
		}
		if posts.left < 0 {
			t.Fatalf("post budget overdrawn: %d of %d left", posts.left, budget)
		}
		for _, l := range posts.col.links(u) {
			checkURL(t, l.URL)
		}
	})
}
