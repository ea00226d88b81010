package robots_test

import (
	"fmt"
	"net/url"

	"github.com/mapthenet/mapthenet/crawl/robots"
)

func Example() {
	// What the fetcher got for https://example.com/robots.txt.
	r, available := robots.FromStatus(200, []byte(`
User-agent: *
Disallow: /private/
Allow: /private/open$
Crawl-delay: 2.5
`))
	if !available {
		return // skip the site this visit
	}
	g := r.Group("MapTheNetBot")
	u, _ := url.Parse("https://example.com/private/open")
	delay, _ := g.CrawlDelay()
	fmt.Println(g.Allowed(robots.PathOf(u)), g.Allowed("/private/x"), delay, r.OptedOut("MapTheNetBot"))
	// Output: true false 2.5s false
}
