package crawl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
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

// run is the visit from end to end: find the home page's origin (its
// robots.txt read), read the home page, then same-site pages breadth-first
// within the budget. Every way a visit ends is a stop that apply writes
// into the result; only a visit that read its queue out ends here.
func (v *visit) run(ctx context.Context) error {
	home, s := v.findHome(ctx)
	if s != nil {
		return s.apply(v, true)
	}

	// The home page.
	v.seen[home.String()] = true
	pg, s := v.read(ctx, queued{u: home}, true)
	if pg != nil {
		https := pg.final.Scheme == "https" && pg.tls
		v.res.HTTPS = &https
	}
	if s != nil {
		return s.apply(v, true)
	}

	// Same-site links, breadth-first.
	for len(v.queue) > 0 && v.res.Pages < v.budget {
		q := v.queue[0]
		v.queue = v.queue[1:]
		if _, s := v.read(ctx, q, false); s != nil {
			return s.apply(v, false)
		}
	}
	v.res.Outcome = data.OutcomeOK
	v.res.Complete = true
	v.res.Links = v.links.result(v.htmlPages)
	return nil
}

// findHome finds where the home page is: https, then http; the bare name,
// then www. The first origin whose robots.txt request is answered is the
// visit's: what its robots.txt says (robotsStop, opted out) may end the
// visit there. When no origin answers, the visit is the most telling
// failure met.
func (v *visit) findHome(ctx context.Context) (*url.URL, *stop) {
	var lastErr *fetch.Error
	for _, host := range []string{v.domain, "www." + v.domain} {
		for _, scheme := range []string{"https", "http"} {
			origin := &url.URL{Scheme: scheme, Host: host, Path: "/"}
			hr, err := v.robotsFor(ctx, origin)
			if err != nil {
				return nil, &stop{abandon: true}
			}
			if hr.err != nil && unreachable(hr.err) {
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
			if s := robotsStop(hr); s != nil {
				return nil, s
			}
			if hr.optedOut {
				return nil, &stop{outcome: data.OutcomeOptedOut}
			}
			return origin, nil
		}
	}
	if lastErr == nil {
		return nil, &stop{outcome: data.OutcomeConnectError, reason: "no answer"}
	}
	return nil, &stop{outcome: outcomeOf(lastErr), reason: lastErr.Short()}
}

// unreachable reports whether a request failed before any answer at its
// origin (no such host, no connection, no TLS session): the next scheme or
// host of the site may answer.
func unreachable(e *fetch.Error) bool {
	return e.Kind == fetch.KindDNS || e.Kind == fetch.KindConnect || e.Kind == fetch.KindTLS
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

// stop ends a visit early, or whole (complete).
type stop struct {
	outcome    data.Outcome
	reason     string
	retryAfter time.Duration
	abandon    bool // the crawl is stopping: nothing of the visit is recorded
	// complete: the visit ended whole on its home page (it moved to
	// another site, or its robots.txt disallows it); the links read so far
	// are the domain's whole set.
	complete bool
}

// apply writes how the visit ended into its result. atHome: the stop came
// at the home page or before it (robots.txt): the visit is that failure,
// with no links (but for a complete stop).
func (s *stop) apply(v *visit, atHome bool) error {
	if s.abandon {
		return ErrAbandoned
	}
	v.res.Outcome = s.outcome
	v.res.OptedOut = s.outcome == data.OutcomeOptedOut
	if s.complete {
		v.res.Complete = true
		v.res.Links = v.links.result(0)
		return nil
	}
	v.res.Error = s.reason
	v.res.RetryAfter = s.retryAfter
	v.res.Complete = false
	switch {
	case atHome:
	case s.outcome == data.OutcomeThrottled || s.outcome == data.OutcomeBotProtection:
		// Throttled or blocked on an inner page: the site asked us to go
		// away whichever page it said so on, so the visit is that failure
		// (its wait applies: 90 days, or Retry-After), and the links read
		// before still add to the domain's edges as a partial visit's do.
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

// stopFor is the stop of a failed request.
func stopFor(e *fetch.Error) *stop {
	if e.Kind == fetch.KindCanceled {
		return &stop{abandon: true}
	}
	return &stop{outcome: outcomeOf(e), reason: e.Short()}
}
