package crawl

import (
	"io"
	"net/http"
	"net/url"

	"github.com/mapthenet/mapthenet/crawl/page"
)

// readLinks reads a page's links as the body streams in (crawl/page reads
// HTML and feeds): links to other sites into the link set, same-site ones
// into the queue, as meta robots and X-Robots-Tag allow.
func (v *visit) readLinks(u *url.URL, feed bool, h http.Header, body io.Reader) {
	ct := h.Get("Content-Type")
	kind := page.Classify(ct, feed)
	var pg *page.Page
	switch kind {
	case page.HTML:
		pg, _ = v.c.reader.ReadHTML(body, ct, u)
		v.htmlPages++
	case page.Feed:
		pg, _ = v.c.reader.ReadFeed(body, ct, u)
	default:
		return
	}
	if pg == nil {
		return
	}
	eff := pg.Effective(v.c.reader.ParseXRobotsTag(h.Values("X-Robots-Tag")))
	onPage := map[string]bool{}
	for _, l := range eff.Edges {
		site := v.c.siteOf(l.URL)
		if site == "" || site == v.domain {
			continue
		}
		v.links.add(site, l.Nofollow, l.Words)
		if kind == page.HTML && !onPage[site] {
			onPage[site] = true
			v.links.onPage(site)
		}
	}
	for _, f := range eff.Follow {
		v.enqueue(f, false)
	}
	for _, f := range eff.Feeds {
		v.enqueue(f, true)
	}
}

func (v *visit) enqueue(u *url.URL, feed bool) {
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") || v.c.siteOf(u) != v.domain {
		return
	}
	if !feed && page.Skip(u) {
		return
	}
	k := u.String()
	if v.seen[k] {
		return
	}
	v.seen[k] = true
	// Bound the queue: more than the budget can never be read, a few
	// spares cover links that turn out skipped or broken.
	if len(v.queue) < 4*v.budget+16 {
		v.queue = append(v.queue, queued{u: u, feed: feed})
	}
}
