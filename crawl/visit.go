package crawl

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/page"
	"github.com/mapthenet/mapthenet/crawl/robots"
	"github.com/mapthenet/mapthenet/data"
)

// visit is the state of one visit of one domain.
type visit struct {
	c      *Crawler
	domain string
	budget int // pages to read at most
	client *fetch.Client
	res    *data.VisitResult

	robots map[string]*hostRobots // by origin: scheme://host:port
	ips    map[string]string      // host → first address (for --ip-delay)
	delay  time.Duration          // the largest Crawl-delay read this visit

	links     *linkSet
	htmlPages int
	seen      map[string]bool
	queue     []queued
}

type queued struct {
	u    *url.URL
	feed bool // advertised as a feed: read as one
}

// hostRobots is one origin's robots.txt as read in this visit.
type hostRobots struct {
	group     *robots.Group
	available bool
	status    int
	readAt    time.Time
	err       *fetch.Error // the request failed
	tooMany   bool         // more than MaxRedirects
	optedOut  bool
	retry     time.Duration
}

// Visit reads one domain: robots.txt, the home page, then same-site links
// breadth-first up to pages pages. It returns ErrAbandoned when ctx ends
// first: nothing of the visit must be recorded then.
func (c *Crawler) Visit(ctx context.Context, domain string, pages int) (*data.VisitResult, error) {
	if pages <= 0 {
		pages = c.opts.Tiers.Lowest().Pages
	}
	v := &visit{
		c: c, domain: domain, budget: pages,
		client: c.fetch.NewClient(),
		res:    &data.VisitResult{Domain: domain, StartedAt: c.opts.Clock.Now().UTC()},
		robots: map[string]*hostRobots{},
		ips:    map[string]string{},
		links:  newLinkSet(),
		seen:   map[string]bool{},
	}
	defer v.client.Close()
	err := v.run(ctx)
	if ctx.Err() != nil || errors.Is(err, ErrAbandoned) {
		return nil, ErrAbandoned
	}
	v.res.FinishedAt = c.opts.Clock.Now().UTC()
	if !v.res.Outcome.Valid() {
		return nil, fmt.Errorf("crawl: visit of %s ended without an outcome", domain)
	}
	return v.res, nil
}

func (v *visit) siteGap() time.Duration { return max(v.c.opts.MinDelay, v.delay) }

func (v *visit) fail(o data.Outcome, reason string) error {
	v.res.Outcome = o
	v.res.Error = reason
	return nil
}

// outcomeOf maps a request failure to a visit outcome.
func outcomeOf(e *fetch.Error) data.Outcome {
	switch e.Kind {
	case fetch.KindDNS:
		return data.OutcomeDNSError
	case fetch.KindTimeout:
		return data.OutcomeTimeout
	}
	return data.OutcomeConnectError
}

func (v *visit) run(ctx context.Context) error {
	// Where the home page is: https, then http; the bare name, then www.
	var home *url.URL
	var lastErr *fetch.Error
	for _, host := range []string{v.domain, "www." + v.domain} {
		for _, scheme := range []string{"https", "http"} {
			origin := &url.URL{Scheme: scheme, Host: host, Path: "/"}
			hr, err := v.robotsFor(ctx, origin)
			if err != nil {
				return err
			}
			if hr.err != nil && (hr.err.Kind == fetch.KindDNS || hr.err.Kind == fetch.KindConnect || hr.err.Kind == fetch.KindTLS) {
				// Not answering here: try the next scheme or host. A refusal
				// by the address guard says more than what www. gives after
				// it (often no such host): it is kept.
				if lastErr == nil || !lastErr.Refused() {
					lastErr = hr.err
				}
				if hr.err.Kind == fetch.KindDNS {
					break // no such host: its other scheme cannot answer either
				}
				continue
			}
			v.res.RobotsReadAt = hr.readAt
			v.res.RobotsStatus = hr.status
			v.facts(ctx, host)
			if hr.err == nil && hr.status != 0 {
				https := scheme == "https"
				v.res.HTTPS = &https
			}
			switch {
			case hr.err != nil:
				return v.fail(data.OutcomeRobotsUnavailable, "robots.txt: "+hr.err.Short())
			case hr.tooMany:
				return v.fail(data.OutcomeRobotsUnavailable, "robots.txt: too many redirects")
			case hr.status == http.StatusTooManyRequests:
				v.res.RetryAfter = hr.retry
				return v.fail(data.OutcomeThrottled, "robots.txt: status 429")
			case !hr.available:
				return v.fail(data.OutcomeRobotsUnavailable, fmt.Sprintf("robots.txt: status %d", hr.status))
			case hr.optedOut:
				v.res.OptedOut = true
				v.res.Outcome = data.OutcomeOptedOut
				return nil
			}
			home = origin
			break
		}
		if home != nil {
			break
		}
	}
	if home == nil {
		if lastErr == nil {
			return v.fail(data.OutcomeConnectError, "no answer")
		}
		return v.fail(outcomeOf(lastErr), lastErr.Short())
	}

	// The home page.
	v.seen[home.String()] = true
	pg, stop := v.read(ctx, queued{u: home}, true)
	if stop != nil {
		return stop.apply(v, true)
	}
	if pg != nil {
		https := pg.final.Scheme == "https" && pg.tls
		v.res.HTTPS = &https
	}
	if v.res.Outcome != "" { // moved, gone, http_error …
		return nil
	}

	// Same-site links, breadth-first.
	for len(v.queue) > 0 && v.res.Pages < v.budget {
		q := v.queue[0]
		v.queue = v.queue[1:]
		if _, stop := v.read(ctx, q, false); stop != nil {
			return stop.apply(v, false)
		}
	}
	v.res.Outcome = data.OutcomeOK
	v.res.Complete = true
	v.res.Links = v.links.result(v.htmlPages)
	return nil
}

// stop ends a visit early.
type stop struct {
	outcome    data.Outcome
	reason     string
	retryAfter time.Duration
	abandon    bool
}

func (s *stop) apply(v *visit, atHome bool) error {
	if s.abandon {
		return ErrAbandoned
	}
	v.res.Error = s.reason
	v.res.RetryAfter = s.retryAfter
	v.res.Complete = false
	switch {
	case atHome:
		v.res.Outcome = s.outcome
	case s.outcome == data.OutcomeThrottled || s.outcome == data.OutcomeBotProtection:
		// Throttled or blocked on an inner page: the site asked us to go
		// away whichever page it said so on, so the visit is that failure
		// (its wait applies: 90 days, or Retry-After), and the links read
		// before still add to the domain's edges as a partial visit's do.
		v.res.Outcome = s.outcome
		v.res.Links = v.links.result(0)
	default:
		// Stopped after the home page was read (timed out, broken off):
		// partial, its links are added to the domain's edges; the next
		// visit comes by tier.
		v.res.Outcome = data.OutcomePartial
		v.res.Links = v.links.result(0)
	}
	return nil
}

func stopFor(e *fetch.Error) *stop {
	if e.Kind == fetch.KindCanceled {
		return &stop{abandon: true}
	}
	return &stop{outcome: outcomeOf(e), reason: e.Short()}
}

// readResult is a page that was requested.
type readResult struct {
	final *url.URL
	tls   bool
}

// read requests one queued URL (following same-site redirects, each hop
// checked against robots.txt and paced), reads it and queues its links.
// A nil result with a nil stop means the URL was skipped or gave nothing.
func (v *visit) read(ctx context.Context, q queued, home bool) (*readResult, *stop) {
	u := q.u
	for hop := 0; ; hop++ {
		if site := v.c.siteOf(u); site != v.domain {
			if home && site != "" {
				// The home page moved to another site: a followed edge, the end.
				v.links.addMoved(site)
				v.res.Outcome = data.OutcomeMoved
				v.res.Complete = true
				v.res.Links = v.links.result(0)
				return nil, nil
			}
			if home {
				// The home page moved to a host with no registrable domain
				// (an IP address, a bare name): never fetched. A failure,
				// like a site whose addresses are all refused, not an empty
				// complete visit that would wipe the domain's edges.
				return nil, &stop{outcome: data.OutcomeConnectError, reason: "home page: redirect to an address not fetched"}
			}
			return nil, nil // a redirect off the site: not followed
		}
		hr, err := v.robotsFor(ctx, u)
		if err != nil {
			return nil, &stop{abandon: true}
		}
		if home && (hr.err != nil || !hr.available) {
			// The home page led to another host of the site whose
			// robots.txt cannot be read: as if it were the first.
			switch {
			case hr.err != nil && hr.err.Kind != fetch.KindTimeout:
				return nil, &stop{outcome: outcomeOf(hr.err), reason: "robots.txt: " + hr.err.Short()}
			case hr.status == http.StatusTooManyRequests:
				return nil, &stop{outcome: data.OutcomeThrottled, reason: "robots.txt: status 429", retryAfter: hr.retry}
			}
			reason := fmt.Sprintf("robots.txt: status %d", hr.status)
			switch {
			case hr.tooMany:
				reason = "robots.txt: too many redirects"
			case hr.err != nil:
				reason = "robots.txt: " + hr.err.Short()
			}
			return nil, &stop{outcome: data.OutcomeRobotsUnavailable, reason: reason}
		}
		if !hr.available || hr.err != nil || !hr.group.Allowed(robots.PathOf(u)) {
			if home {
				v.res.Outcome = data.OutcomeOK
				v.res.Complete = true
				v.res.Links = v.links.result(0)
			}
			return nil, nil
		}
		if !home && !q.feed && page.Skip(u) {
			return nil, nil
		}
		resp, ferr := v.get(ctx, u, func(status int, h http.Header) bool {
			return status >= 400 || page.Classify(h.Get("Content-Type"), q.feed) != page.Other
		}, func(status int, h http.Header, body io.Reader) {
			// Mark this URL read before its links are queued: after a
			// redirect (example.com/ to www.example.com/) the page's own
			// links to itself must not queue it a second time.
			v.seen[u.String()] = true
			if strings.EqualFold(h.Get("Cf-Mitigated"), "challenge") {
				return // a challenge served as 2xx: classifyResponse stops the visit
			}
			v.take(u, q.feed, h, body)
		})
		if ferr != nil {
			return nil, stopFor(ferr)
		}
		if resp.Status >= 300 && resp.Status < 400 && resp.Location != "" {
			if home {
				v.res.HTTPStatus = resp.Status
			}
			next, err := u.Parse(resp.Location)
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
			u = next
			continue
		}
		// A response, not a redirect: a page.
		v.seen[u.String()] = true
		v.res.Pages++
		if home {
			v.res.HTTPStatus = resp.Status
		}
		if s := classifyResponse(resp, v.c.opts.Clock.Now()); s != nil {
			if home || s.outcome == data.OutcomeThrottled || s.outcome == data.OutcomeBotProtection {
				return nil, s
			}
			return &readResult{final: u, tls: resp.TLS}, nil // a broken link: go on
		}
		if resp.Status >= 300 {
			if home {
				v.res.Outcome = data.OutcomeHTTPError
				v.res.Error = fmt.Sprintf("home page: status %d", resp.Status)
				return &readResult{final: u, tls: resp.TLS}, nil
			}
			return &readResult{final: u, tls: resp.TLS}, nil
		}
		if resp.Err != nil {
			// The body broke off: what was read is used, the visit stops.
			return &readResult{final: u, tls: resp.TLS}, stopFor(resp.Err)
		}
		return &readResult{final: u, tls: resp.TLS}, nil
	}
}

// get paces and sends one request; sink (nil: none) reads a 2xx body as it streams in.
func (v *visit) get(ctx context.Context, u *url.URL, accept fetch.Accept, sink fetch.Sink) (*response, *fetch.Error) {
	release, err := v.c.pacer.Acquire(ctx, v.paceKeys(ctx, u)...)
	if err != nil {
		return nil, &fetch.Error{Kind: fetch.KindCanceled, Err: err}
	}
	defer release()
	r, err := v.client.Get(ctx, u.String(), accept, sink)
	var fe *fetch.Error
	if err != nil && !errors.As(err, &fe) {
		fe = &fetch.Error{Kind: fetch.KindOther, Err: err}
	}
	if r == nil {
		v.c.opts.Metrics.request(0, fe)
		return nil, fe
	}
	v.c.opts.Metrics.request(r.Status, fe)
	v.c.opts.Metrics.read(r.Bytes)
	v.res.Bytes += r.Bytes
	return &response{Response: r, Err: fe}, nil
}

// response is a fetch.Response whose body may have broken off (Err).
type response struct {
	*fetch.Response
	Err *fetch.Error
}

// take reads a page's links as the body streams in: external ones into
// the link set, same-site ones into the queue.
func (v *visit) take(u *url.URL, feed bool, h http.Header, body io.Reader) {
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
