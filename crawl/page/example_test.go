package page_test

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/mapthenet/mapthenet/crawl/page"
)

// A crawler reads a response by its Content-Type, then applies the
// response's X-Robots-Tag.
func Example() {
	pageURL, _ := url.Parse("https://www.example.com/blog/")
	body := strings.NewReader(`<html><head>
<link rel="alternate" type="application/rss+xml" href="/feed.xml">
</head><body>
<a href="https://other.example/guide">A Guide to Kites</a>
<a href="/about">About us</a>
<a href="https://ads.example/" rel="sponsored">Buy now</a>
</body></html>`)

	var r page.Reader // zero value: token mapthenetbot, 1024 KB, 10,000 links
	ct := "text/html; charset=utf-8"
	if page.Classify(ct, false) != page.HTML {
		return // dropped at its headers
	}
	p, err := r.ReadHTML(body, ct, pageURL)
	if err != nil {
		fmt.Println("read error:", err)
	}
	eff := p.Effective(r.ParseXRobotsTag([]string{"googlebot: noindex"}))
	for _, l := range eff.Edges {
		fmt.Println(l.URL, l.Nofollow, l.Words)
	}
	fmt.Println("follow:", eff.Follow)
	fmt.Println("feeds:", eff.Feeds)
	// Output:
	// https://other.example/guide false [guide kites]
	// https://www.example.com/about false []
	// https://ads.example/ true [buy]
	// follow: [https://other.example/guide https://www.example.com/about]
	// feeds: [https://www.example.com/feed.xml]
}
