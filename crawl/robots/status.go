package robots

import (
	"net/url"
	"strings"
)

// MaxRedirects is how many redirects the fetcher follows for robots.txt
// (RFC 9309 section 2.3.1.2 asks for at least five). One more makes the file
// unavailable.
const MaxRedirects = 5

// AllowAll returns a Robots with no rules: what a missing robots.txt means.
func AllowAll() *Robots { return &Robots{} }

// DisallowAll returns a Robots that disallows everything to every token
// (but /robots.txt): what RFC 9309 says to assume when the file cannot be
// reached.
func DisallowAll() *Robots {
	return &Robots{groups: []group{{star: true, rules: []rule{newRule("/", false)}}}}
}

// FromStatus turns the final response to a robots.txt request into rules.
// body may be longer than MaxBytes; when the file is, the fetcher should
// hand over more than MaxBytes of it (it reads up to 1024 KB), so that a
// line cut at the limit is known to be cut and is not read.
// available is false when the site must be skipped this visit and retried
// later; r is then DisallowAll, so that a caller that forgets to look still
// fetches nothing.
//
//   - 2xx: the body is parsed.
//   - 429 Too Many Requests: unavailable. RFC 9309 puts all 4xx under "no
//     restrictions", but a site that asks us to slow down must not get a
//     full visit at once; DESIGN.md has 429 stop a visit, and Google treats
//     it the same way.
//   - other 4xx, 401 and 403 included: no restrictions (RFC 9309 section
//     2.3.1.3).
//   - 3xx (the fetcher gives up after MaxRedirects), 5xx, and anything else:
//     unavailable (section 2.3.1.4).
func FromStatus(status int, body []byte) (r *Robots, available bool) {
	switch {
	case status >= 200 && status <= 299:
		return Parse(body), true
	case status == 429:
		return DisallowAll(), false
	case status >= 400 && status <= 499:
		return AllowAll(), true
	}
	return DisallowAll(), false
}

// PathOf returns what Group.Allowed compares for u: its path (as escaped in
// the request) and query, without the fragment; "/" for an empty path.
func PathOf(u *url.URL) string {
	p := u.RequestURI()
	if !strings.HasPrefix(p, "/") {
		p = "/" + p // an opaque URL such as "http:x": never a real request path
	}
	return p
}
