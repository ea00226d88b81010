package simweb

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Violation is one broken promise seen in the request log.
type Violation struct {
	Check  string // the check's name, e.g. "robots-first"
	Site   string // registrable domain
	Detail string
}

func (v Violation) String() string { return v.Check + " " + v.Site + ": " + v.Detail }

// The checks read a request log (Requests) of one crawl: each assumes one
// visit per site in the log, so call Reset between crawls.

// Rules are the crawler settings CheckAll checks against.
type Rules struct {
	MinDelay  time.Duration            // --min-delay
	Slack     time.Duration            // clock tolerance for the pace checks (for example 5ms)
	MaxPages  int                      // pages per site per visit (0: FirstVisitPages)
	UserAgent string                   // expected User-Agent ("" : not checked)
	Platforms map[string]time.Duration // shared paces, e.g. {"github.io": 2s}
}

// CheckAll runs every check.
func (w *Web) CheckAll(reqs []Request, r Rules) []Violation {
	if r.MaxPages == 0 {
		r.MaxPages = FirstVisitPages
	}
	var out []Violation
	out = append(out, w.CheckRobotsFirst(reqs)...)
	out = append(out, w.CheckRobotsAllowed(reqs)...)
	out = append(out, CheckOneAtATime(reqs)...)
	out = append(out, w.CheckPace(reqs, r.MinDelay, r.Slack)...)
	for p, gap := range r.Platforms {
		out = append(out, w.CheckPlatformPace(reqs, p, gap, r.Slack)...)
	}
	out = append(out, CheckStopAfterThrottle(reqs)...)
	out = append(out, CheckMaxPages(reqs, r.MaxPages)...)
	out = append(out, CheckNoRepeat(reqs)...)
	out = append(out, CheckNoMedia(reqs)...)
	out = append(out, CheckSigned(reqs)...)
	if r.UserAgent != "" {
		out = append(out, CheckUserAgent(reqs, r.UserAgent)...)
	}
	return out
}

// sorted orders violations by site, then detail, so that reports are stable.
func sorted(vs []Violation) []Violation {
	slices.SortStableFunc(vs, func(a, b Violation) int {
		if c := strings.Compare(a.Site, b.Site); c != 0 {
			return c
		}
		return strings.Compare(a.Detail, b.Detail)
	})
	return vs
}

func at(r Request) string {
	return fmt.Sprintf("#%d %s://%s%s", r.Seq, r.Scheme, r.Host, r.Path)
}

// CheckRobotsFirst: every host's first request is its robots.txt (redirect
// hops /robots.txt?hop=N included).
func (w *Web) CheckRobotsFirst(reqs []Request) []Violation {
	var out []Violation
	seen := map[string]bool{}
	for _, r := range reqs {
		if w.world.byHost[r.Host] == nil || seen[r.Host] {
			continue
		}
		seen[r.Host] = true
		if !isRobotsPath(r.Path) {
			out = append(out, Violation{"robots-first", r.Site, "first request to " + r.Host + " is not robots.txt: " + at(r)})
		}
	}
	return out
}

// CheckRobotsAllowed: no request for a path the host's robots.txt disallows
// for MapTheNetBot, and none but robots.txt to a site whose robots.txt is
// unavailable (5xx, hanging, too many redirects).
func (w *Web) CheckRobotsAllowed(reqs []Request) []Violation {
	var out []Violation
	for _, r := range reqs {
		h := w.world.byHost[r.Host]
		if h == nil || h.robots.allowed(Token, r.Path) {
			continue
		}
		why := "disallowed by robots.txt"
		if !h.robots.available() {
			why = "robots.txt unavailable, the site should have been skipped"
		}
		out = append(out, Violation{"robots-allowed", r.Site, why + ": " + at(r)})
	}
	return out
}

// bySite groups requests by registrable domain, in start order.
func bySite(reqs []Request, key func(Request) string) map[string][]Request {
	m := map[string][]Request{}
	for _, r := range reqs {
		if k := key(r); k != "" {
			m[k] = append(m[k], r)
		}
	}
	for _, rs := range m {
		slices.SortStableFunc(rs, func(a, b Request) int { return a.Start.Compare(b.Start) })
	}
	return m
}

func siteKey(r Request) string { return r.Site }

// CheckOneAtATime: never two requests in flight at once to one registrable
// domain (all its hosts). A request the client abandoned (Aborted) ends,
// for the server, only when it notices, so its end is not held against the
// next request.
func CheckOneAtATime(reqs []Request) []Violation {
	var out []Violation
	for site, rs := range bySite(reqs, siteKey) {
		var busy Request
		var until time.Time
		for _, r := range rs {
			if r.Start.Before(until) {
				out = append(out, Violation{"one-at-a-time", site, fmt.Sprintf("%s started while %s was in flight", at(r), at(busy))})
			}
			if !r.Aborted && r.End.After(until) {
				busy, until = r, r.End
			}
		}
	}
	return sorted(out)
}

// CheckPace: per site, request starts at least max(minDelay, Crawl-delay)
// apart (less slack).
func (w *Web) CheckPace(reqs []Request, minDelay, slack time.Duration) []Violation {
	var out []Violation
	for site, rs := range bySite(reqs, siteKey) {
		gap := minDelay
		if s := w.world.byName[site]; s != nil {
			gap = max(gap, time.Duration(s.CrawlDelay)*time.Second)
		}
		out = append(out, checkGaps("pace", site, rs, gap-slack)...)
	}
	return sorted(out)
}

// CheckPlatformPace: requests to all sites of a platform (Site.Platform)
// start at least gap apart (less slack).
func (w *Web) CheckPlatformPace(reqs []Request, platform string, gap, slack time.Duration) []Violation {
	key := func(r Request) string {
		if s := w.world.byName[r.Site]; s != nil && s.Platform == platform {
			return platform
		}
		return ""
	}
	return checkGaps("platform-pace", platform, bySite(reqs, key)[platform], gap-slack)
}

func checkGaps(check, site string, rs []Request, gap time.Duration) []Violation {
	var out []Violation
	for i := 1; i < len(rs); i++ {
		if d := rs[i].Start.Sub(rs[i-1].Start); d < gap {
			out = append(out, Violation{check, site, fmt.Sprintf("%s started %v after %s (want ≥ %v)", at(rs[i]), d, at(rs[i-1]), gap)})
		}
	}
	return out
}

// CheckStopAfterThrottle: no request to a site after it answered 429 or 503.
func CheckStopAfterThrottle(reqs []Request) []Violation {
	var out []Violation
	for site, rs := range bySite(reqs, siteKey) {
		var stop *Request
		for i, r := range rs {
			if stop != nil && r.Start.After(stop.End) {
				out = append(out, Violation{"stop-after-throttle", site, fmt.Sprintf("%s after %d at %s", at(r), stop.Status, at(*stop))})
			}
			if stop == nil && (r.Status == 429 || r.Status == 503) {
				stop = &rs[i]
			}
		}
	}
	return sorted(out)
}

// isPage: every request but robots.txt and redirect responses counts as a
// page (DESIGN.md), connections closed unanswered neither.
func isPage(r Request) bool {
	return !isRobotsPath(r.Path) && r.Status != 0 && (r.Status < 300 || r.Status > 399)
}

// CheckMaxPages: at most n pages per site.
func CheckMaxPages(reqs []Request, n int) []Violation {
	var out []Violation
	for site, rs := range bySite(reqs, siteKey) {
		pages := 0
		for _, r := range rs {
			if isPage(r) {
				pages++
			}
		}
		if pages > n {
			out = append(out, Violation{"max-pages", site, fmt.Sprintf("%d pages, at most %d", pages, n)})
		}
	}
	return sorted(out)
}

// CheckNoRepeat: no page read twice (the same scheme, host, path and query
// answered other than by a redirect more than once). Redirect responses
// may repeat: following a loop up to the limit asks for them again.
func CheckNoRepeat(reqs []Request) []Violation {
	var out []Violation
	seen := map[string]Request{}
	for _, r := range reqs {
		if !isPage(r) {
			continue
		}
		k := r.Scheme + "://" + r.Host + r.Path
		if first, ok := seen[k]; ok {
			out = append(out, Violation{"no-repeat", r.Site, fmt.Sprintf("%s read again (first %s)", at(r), at(first))})
			continue
		}
		seen[k] = r
	}
	return sorted(out)
}

// CheckNoMedia: no request for an image, PDF, archive or media URL.
func CheckNoMedia(reqs []Request) []Violation {
	var out []Violation
	for _, r := range reqs {
		if isMediaPath(r.Path) {
			out = append(out, Violation{"no-media", r.Site, "requested " + at(r)})
		}
	}
	return out
}

// CheckSigned: every request carries Signature, Signature-Input (covering
// @authority or @target-uri) and Signature-Agent.
func CheckSigned(reqs []Request) []Violation {
	var out []Violation
	for _, r := range reqs {
		var missing []string
		if r.Signature == "" {
			missing = append(missing, "Signature")
		}
		if r.SignatureInput == "" {
			missing = append(missing, "Signature-Input")
		} else if !strings.Contains(r.SignatureInput, `"@authority"`) && !strings.Contains(r.SignatureInput, `"@target-uri"`) {
			missing = append(missing, "@authority in Signature-Input")
		}
		if r.SignatureAgent == "" {
			missing = append(missing, "Signature-Agent")
		}
		if len(missing) > 0 {
			out = append(out, Violation{"signed", r.Site, "no " + strings.Join(missing, ", ") + ": " + at(r)})
		}
	}
	return out
}

// CheckUserAgent: every request says ua.
func CheckUserAgent(reqs []Request, ua string) []Violation {
	var out []Violation
	for _, r := range reqs {
		if r.UserAgent != ua {
			out = append(out, Violation{"user-agent", r.Site, fmt.Sprintf("User-Agent %q: %s", r.UserAgent, at(r))})
		}
	}
	return out
}

// Pages counts the pages (see CheckMaxPages) each site was asked for.
func Pages(reqs []Request) map[string]int {
	m := map[string]int{}
	for _, r := range reqs {
		if isPage(r) {
			m[r.Site]++
		}
	}
	return m
}
