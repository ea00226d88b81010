package crawl

import (
	"context"
	"net/http"
	"net/url"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/robots"
)

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
