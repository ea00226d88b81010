package crawl

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/page"
	"github.com/mapthenet/mapthenet/data"
)

// readResult is a page whose response was read through: its final
// address and whether it came over verified TLS.
type readResult struct {
	final *url.URL
	tls   bool
}

// read requests one queued URL and reads it, following same-site redirects
// hop by hop. Each hop goes down the fetch path's layers in turn:
//
//	offSite   a hop to another site ends here (the home page moved)
//	gate      the robots gate: its origin's robots.txt (robotsgate.go)
//	fetchPage the paced, signed request (request.go), its body's links
//	          read as it streams in (readlinks.go)
//	redirect  a 3xx: the next hop, or why it is not followed
//	classify  a page: whether it stops the visit (classify.go)
//
// It returns the page when one was read through (the home page's HTTPS
// comes from it) and the stop when the visit ends here; both nil: the URL
// was skipped or was a broken link, and the visit goes on.
func (v *visit) read(ctx context.Context, q queued, home bool) (*readResult, *stop) {
	u := q.u
	for hop := 0; ; hop++ {
		if s, on := v.offSite(u, home); !on {
			return nil, s
		}
		if s, pass := v.gate(ctx, u, home); !pass {
			return nil, s
		}
		if !home && !q.feed && page.Skip(u) {
			return nil, nil // not a page (an image, an archive …): never requested
		}
		resp, ferr := v.fetchPage(ctx, u, q.feed)
		if ferr != nil {
			return nil, stopFor(ferr)
		}
		if isRedirect(resp) {
			if home {
				v.res.HTTPStatus = resp.Status
			}
			next, s := v.redirect(u, resp.Location, hop, home)
			if next == nil {
				return nil, s
			}
			u = next
			continue
		}
		// A response, not a redirect: a page.
		v.seen[u.String()] = true
		v.res.Pages++
		if home {
			v.res.HTTPStatus = resp.Status
		}
		s, whole := classifyPage(resp, v.c.opts.Clock.Now(), home)
		if !whole {
			return nil, s
		}
		return &readResult{final: u, tls: resp.TLS}, s
	}
}

// offSite says whether u is on the visited site (on); when it is not, a
// redirect led there, and for the home page that ends the visit: moved to
// another site (a followed edge, the visit complete), or to a host with no
// registrable domain (an IP address, a bare name: never fetched, a failure
// like a site whose addresses are all refused, not an empty complete visit
// that would wipe the domain's edges). An inner page's redirect off the
// site is not followed.
func (v *visit) offSite(u *url.URL, home bool) (s *stop, on bool) {
	site := v.c.siteOf(u)
	switch {
	case site == v.domain:
		return nil, true
	case !home:
		return nil, false
	case site != "":
		v.links.addMoved(site)
		return &stop{outcome: data.OutcomeMoved, complete: true}, false
	}
	return &stop{outcome: data.OutcomeConnectError, reason: "home page: redirect to an address not fetched"}, false
}

// fetchPage requests u: a body worth reading (an error page, HTML or a
// feed) is read; a 2xx page's links are read as it streams in.
func (v *visit) fetchPage(ctx context.Context, u *url.URL, feed bool) (*response, *fetch.Error) {
	return v.get(ctx, u, func(status int, h http.Header) bool {
		return status >= 400 || page.Classify(h.Get("Content-Type"), feed) != page.Other
	}, func(status int, h http.Header, body io.Reader) {
		// Mark this URL read before its links are queued: after a
		// redirect (example.com/ to www.example.com/) the page's own
		// links to itself must not queue it a second time.
		v.seen[u.String()] = true
		if strings.EqualFold(h.Get("Cf-Mitigated"), "challenge") {
			return // a challenge served as 2xx: classifyPage stops the visit
		}
		v.readLinks(u, feed, h, body)
	})
}

// isRedirect: a 3xx with a Location to follow (one without is a page).
func isRedirect(r *response) bool {
	return r.Status >= 300 && r.Status < 400 && r.Location != ""
}

// redirect returns where a redirect from u (the hop-th of this read) leads,
// or nil and why it is not followed: a bad Location, a page already read or
// queued, more than MaxRedirects hops. Only the home page's redirects can
// end the visit.
func (v *visit) redirect(u *url.URL, location string, hop int, home bool) (*url.URL, *stop) {
	next, err := u.Parse(location)
	if err != nil || (next.Scheme != "http" && next.Scheme != "https") {
		if home {
			return nil, &stop{outcome: data.OutcomeHTTPError, reason: "home page: bad redirect"}
		}
		return nil, nil
	}
	next.Fragment = ""
	if !home && v.seen[next.String()] {
		return nil, nil // leads to a page already read or queued
	}
	if hop+1 > v.c.opts.MaxRedirects {
		if home {
			return nil, &stop{outcome: data.OutcomeHTTPError, reason: "home page: too many redirects"}
		}
		return nil, nil
	}
	return next, nil
}

// classifyPage says what a page's response (not a redirect) means for the
// visit: a stop (nil: go on), and whether the page was read through
// (whole: a status below 400, not a challenge, its body not broken off).
// An inner page's error status is a broken link, and the visit goes on,
// unless the site asks us to go away (throttled, bot protection).
func classifyPage(r *response, now time.Time, home bool) (s *stop, whole bool) {
	if s := classifyResponse(r, now); s != nil {
		if home || s.outcome == data.OutcomeThrottled || s.outcome == data.OutcomeBotProtection {
			return s, false
		}
		return nil, false // a broken link: go on
	}
	if r.Status >= 300 {
		// A 3xx without a Location (304 …): nothing to read.
		if home {
			return &stop{outcome: data.OutcomeHTTPError, reason: fmt.Sprintf("home page: status %d", r.Status)}, true
		}
		return nil, true
	}
	if r.Err != nil {
		// The body broke off: what was read is used, the visit stops.
		return stopFor(r.Err), false
	}
	return nil, true
}
