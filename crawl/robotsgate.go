package crawl

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/robots"
	"github.com/mapthenet/mapthenet/data"
)

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

// allows reports whether the robots.txt read lets us fetch u: never when it
// could not be read.
func (hr *hostRobots) allows(u *url.URL) bool {
	return hr.available && hr.err == nil && hr.group.Allowed(robots.PathOf(u))
}

// robotsStop is the one mapping of what an origin's robots.txt request gave
// to how the visit ends, wherever it was read (the visit's first origin, or
// a host of the site the home page moved to): nil when the file was read
// and its rules decide page by page. RFC 9309 section 2.3.1: an unreachable
// file means nothing may be fetched; DESIGN.md has a 429 wait as the site
// asks.
func robotsStop(hr *hostRobots) *stop {
	switch {
	case hr.err != nil && unreachable(hr.err):
		// Nothing answered (findHome tries the site's other origins before
		// it comes to this).
		return &stop{outcome: outcomeOf(hr.err), reason: "robots.txt: " + hr.err.Short()}
	case hr.err != nil:
		return &stop{outcome: data.OutcomeRobotsUnavailable, reason: "robots.txt: " + hr.err.Short()}
	case hr.tooMany:
		return &stop{outcome: data.OutcomeRobotsUnavailable, reason: "robots.txt: too many redirects"}
	case hr.status == http.StatusTooManyRequests:
		return &stop{outcome: data.OutcomeThrottled, reason: "robots.txt: status 429", retryAfter: hr.retry}
	case !hr.available:
		return &stop{outcome: data.OutcomeRobotsUnavailable, reason: fmt.Sprintf("robots.txt: status %d", hr.status)}
	}
	return nil
}

// gate is the robots gate of one request: u's origin's robots.txt (read
// first if this visit has not yet) must allow u. pass: request it.
// Otherwise the stop says how the visit ends, nil when only u is skipped.
// The home page's origin is as the first one: its robots.txt that cannot
// be read ends the visit (robotsStop), and one that disallows the home
// page ends it complete, with no links.
func (v *visit) gate(ctx context.Context, u *url.URL, home bool) (s *stop, pass bool) {
	hr, err := v.robotsFor(ctx, u)
	if err != nil {
		return &stop{abandon: true}, false
	}
	if home {
		if s := robotsStop(hr); s != nil {
			return s, false
		}
	}
	if hr.allows(u) {
		return nil, true
	}
	if home {
		return &stop{outcome: data.OutcomeOK, complete: true}, false
	}
	return nil, false
}

// robotsFor returns the robots.txt of u's origin (scheme, host, port), read
// once per visit, fresh, before any other request to that origin. The
// error is only ever the crawl stopping.
func (v *visit) robotsFor(ctx context.Context, u *url.URL) (*hostRobots, error) {
	origin := u.Scheme + "://" + u.Host
	if hr, ok := v.robots[origin]; ok {
		return hr, nil
	}
	hr := &hostRobots{}
	target := &url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/robots.txt"}
	for hop := 0; ; hop++ {
		hr.readAt = v.c.opts.Clock.Now().UTC()
		resp, ferr := v.get(ctx, target, nil, nil)
		if ferr != nil {
			if ferr.Kind == fetch.KindCanceled {
				return nil, ErrAbandoned
			}
			hr.err = ferr
			break
		}
		hr.status = resp.Status
		if resp.Err != nil && resp.Err.Kind == fetch.KindCanceled {
			return nil, ErrAbandoned
		}
		if resp.Status >= 300 && resp.Status < 400 {
			next, err := target.Parse(resp.Location)
			if resp.Location == "" || err != nil || (next.Scheme != "http" && next.Scheme != "https") {
				break // unavailable: a 3xx that leads nowhere
			}
			if hop+1 > robots.MaxRedirects || hop+1 > v.c.opts.MaxRedirects {
				hr.tooMany = true
				break
			}
			target = next
			continue
		}
		if resp.Err != nil {
			// The body broke off (timeout mid-file): unavailable, not half rules.
			hr.err = resp.Err
			break
		}
		rules, ok := robots.FromStatus(resp.Status, resp.Body)
		hr.available = ok
		hr.group = rules.Group(v.c.opts.RobotsToken)
		hr.optedOut = ok && rules.OptedOut(v.c.opts.RobotsToken)
		if resp.Status == http.StatusTooManyRequests {
			hr.retry = retryAfter(resp.Header, v.c.opts.Clock.Now())
		}
		if d, has := hr.group.CrawlDelay(); has && ok && d > v.delay {
			v.delay = d
		}
		break
	}
	if hr.group == nil {
		hr.group = robots.DisallowAll().Group(v.c.opts.RobotsToken)
	}
	v.c.opts.Metrics.robotsRead(hr)
	v.robots[origin] = hr
	return hr, nil
}
