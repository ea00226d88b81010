package crawl

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/robots"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/data"
)

// The layers of a visit, each tested alone: no network, no visit.

func fetchErr(k fetch.Kind) *fetch.Error {
	switch k {
	case fetch.KindDNS:
		return &fetch.Error{Kind: k, Err: &net.DNSError{Err: "no such host", IsNotFound: true}}
	case fetch.KindConnect:
		return &fetch.Error{Kind: k, Err: errors.New("connect: connection refused")}
	}
	return &fetch.Error{Kind: k, Err: errors.New("x")}
}

func TestRobotsStop(t *testing.T) {
	read := func(status int) *hostRobots { return &hostRobots{status: status, available: true} }
	tests := []struct {
		name       string
		hr         *hostRobots
		outcome    data.Outcome // "": the visit goes on
		reason     string
		retryAfter time.Duration
	}{
		{"200 read", read(200), "", "", 0},
		{"404 no restrictions", read(404), "", "", 0},
		{"opted out: decided by the caller", &hostRobots{status: 200, available: true, optedOut: true}, "", "", 0},
		{"500", &hostRobots{status: 500}, data.OutcomeRobotsUnavailable, "robots.txt: status 500", 0},
		{"3xx leading nowhere", &hostRobots{status: 302}, data.OutcomeRobotsUnavailable, "robots.txt: status 302", 0},
		{"429", &hostRobots{status: 429, retry: time.Hour}, data.OutcomeThrottled, "robots.txt: status 429", time.Hour},
		{"too many redirects", &hostRobots{status: 301, tooMany: true}, data.OutcomeRobotsUnavailable, "robots.txt: too many redirects", 0},
		{"no such host", &hostRobots{err: fetchErr(fetch.KindDNS)}, data.OutcomeDNSError, "robots.txt: dns: no such host", 0},
		{"refused", &hostRobots{err: fetchErr(fetch.KindConnect)}, data.OutcomeConnectError, "robots.txt: connection refused", 0},
		{"tls", &hostRobots{err: fetchErr(fetch.KindTLS)}, data.OutcomeConnectError, "robots.txt: tls: handshake failed", 0},
		{"timeout", &hostRobots{err: fetchErr(fetch.KindTimeout)}, data.OutcomeRobotsUnavailable, "robots.txt: timeout", 0},
		{"429 whose body broke off", &hostRobots{status: 429, err: fetchErr(fetch.KindTimeout)}, data.OutcomeRobotsUnavailable, "robots.txt: timeout", 0},
		{"other failure", &hostRobots{err: fetchErr(fetch.KindOther)}, data.OutcomeRobotsUnavailable, "robots.txt: request failed", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := robotsStop(tc.hr)
			if tc.outcome == "" {
				if s != nil {
					t.Fatalf("stop %+v, want none", s)
				}
				return
			}
			if s == nil || s.outcome != tc.outcome || s.reason != tc.reason || s.retryAfter != tc.retryAfter || s.complete || s.abandon {
				t.Fatalf("stop %+v, want %s %q retry %v", s, tc.outcome, tc.reason, tc.retryAfter)
			}
		})
	}
}

func TestClassifyPage(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	resp := func(status int, body string, h ...string) *response {
		r := &response{Response: &fetch.Response{Status: status, Header: http.Header{}, Body: []byte(body)}}
		for i := 0; i+1 < len(h); i += 2 {
			r.Header.Set(h[i], h[i+1])
		}
		return r
	}
	broken := resp(200, "")
	broken.Err = fetchErr(fetch.KindTimeout)
	canceled := resp(200, "")
	canceled.Err = fetchErr(fetch.KindCanceled)
	tests := []struct {
		name    string
		r       *response
		home    bool
		outcome data.Outcome // "": go on
		reason  string
		whole   bool
	}{
		{"home 200", resp(200, ""), true, "", "", true},
		{"inner 200", resp(200, ""), false, "", "", true},
		{"home 404", resp(404, ""), true, data.OutcomeGone, "status 404", false},
		{"inner 404: a broken link", resp(404, ""), false, "", "", false},
		{"inner 500: a broken link", resp(500, ""), false, "", "", false},
		{"home 500", resp(500, ""), true, data.OutcomeHTTPError, "status 500", false},
		{"inner 429", resp(429, "", "Retry-After", "60"), false, data.OutcomeThrottled, "status 429", false},
		{"inner 503", resp(503, ""), false, data.OutcomeThrottled, "status 503", false},
		{"inner challenge", resp(403, "", "Cf-Mitigated", "challenge"), false, data.OutcomeBotProtection, "bot protection: cloudflare", false},
		{"home challenge served 200", resp(200, "", "Cf-Mitigated", "challenge"), true, data.OutcomeBotProtection, "bot protection: cloudflare", false},
		{"home 304", resp(304, ""), true, data.OutcomeHTTPError, "home page: status 304", true},
		{"inner 304", resp(304, ""), false, "", "", true},
		{"body broke off", broken, false, data.OutcomeTimeout, "timeout", false},
		{"home body broke off", broken, true, data.OutcomeTimeout, "timeout", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, whole := classifyPage(tc.r, now, tc.home)
			if whole != tc.whole {
				t.Errorf("whole %v, want %v", whole, tc.whole)
			}
			if tc.outcome == "" {
				if s != nil {
					t.Fatalf("stop %+v, want none", s)
				}
				return
			}
			if s == nil || s.outcome != tc.outcome || s.reason != tc.reason {
				t.Fatalf("stop %+v, want %s %q", s, tc.outcome, tc.reason)
			}
		})
	}
	if s, _ := classifyPage(canceled, now, false); s == nil || !s.abandon {
		t.Errorf("a canceled body: %+v, want abandon", s)
	}
	if s, _ := classifyPage(resp(429, "", "Retry-After", "60"), now, true); s.retryAfter != time.Minute {
		t.Errorf("Retry-After: %v", s.retryAfter)
	}
}

func TestRedirect(t *testing.T) {
	c, err := NewCrawler(testCrawlerOptions())
	if err != nil {
		t.Fatal(err)
	}
	v := &visit{c: c, domain: "a.test", seen: map[string]bool{"http://a.test/read": true}}
	from, _ := url.Parse("http://a.test/x")
	tests := []struct {
		location string
		hop      int
		home     bool
		next     string // "": not followed
		reason   string // the home page's stop
	}{
		{"/y#frag", 0, false, "http://a.test/y", ""},
		{"https://www.a.test/", 0, true, "https://www.a.test/", ""},
		{"https://b.test/", 0, false, "https://b.test/", ""}, // offSite decides on the next hop
		{"/read", 0, false, "", ""},
		{"/read", 0, true, "http://a.test/read", ""},
		{"ftp://a.test/", 0, false, "", ""},
		{"ftp://a.test/", 0, true, "", "home page: bad redirect"},
		{"/z", 4, false, "http://a.test/z", ""},
		{"/z", 5, false, "", ""},
		{"/z", 5, true, "", "home page: too many redirects"},
	}
	for _, tc := range tests {
		next, s := v.redirect(from, tc.location, tc.hop, tc.home)
		got := ""
		if next != nil {
			got = next.String()
		}
		reason := ""
		if s != nil {
			reason = s.reason
			if s.outcome != data.OutcomeHTTPError {
				t.Errorf("%s: outcome %s", tc.location, s.outcome)
			}
		}
		if got != tc.next || reason != tc.reason {
			t.Errorf("redirect(%q, hop %d, home %v) = %q %q, want %q %q", tc.location, tc.hop, tc.home, got, reason, tc.next, tc.reason)
		}
	}
}

// testCrawlerOptions are a crawler's options for tests that send nothing.
func testCrawlerOptions() Options {
	return Options{
		MinDelaySet: true,
		ConnectTo:   []fetch.ConnectTo{{ToPort: "1"}},
		UserAgent:   DefaultUserAgent, RobotsToken: DefaultRobotsToken,
		From: "crawler@example.org", SignatureAgentURL: webbotauth.DefaultAgentURL,
		Resolver: stubResolver{},
	}
}

func TestGate(t *testing.T) {
	c, err := NewCrawler(testCrawlerOptions())
	if err != nil {
		t.Fatal(err)
	}
	read := func(body string) *hostRobots {
		r, ok := robots.FromStatus(200, []byte(body))
		return &hostRobots{status: 200, available: ok, group: r.Group(DefaultRobotsToken)}
	}
	// The robots.txt of each origin as if already read this visit: the
	// gate sends nothing.
	v := &visit{c: c, domain: "a.test", robots: map[string]*hostRobots{
		"http://a.test":     read("User-agent: *\nDisallow: /private\n"),
		"http://www.a.test": read("User-agent: *\nDisallow: /\n"),
		"http://m.a.test":   {status: 503, group: robots.DisallowAll().Group(DefaultRobotsToken)},
	}}
	tests := []struct {
		url     string
		home    bool
		pass    bool
		outcome data.Outcome // the stop's; "": none
	}{
		{"http://a.test/", true, true, ""},
		{"http://a.test/page", false, true, ""},
		{"http://a.test/private/x", false, false, ""},
		{"http://www.a.test/", true, false, data.OutcomeOK}, // complete, no links
		{"http://www.a.test/x", false, false, ""},
		{"http://m.a.test/", true, false, data.OutcomeRobotsUnavailable},
		{"http://m.a.test/x", false, false, ""},
	}
	for _, tc := range tests {
		u, _ := url.Parse(tc.url)
		s, pass := v.gate(context.Background(), u, tc.home)
		got := data.Outcome("")
		if s != nil {
			got = s.outcome
		}
		if pass != tc.pass || got != tc.outcome {
			t.Errorf("gate(%s, home %v) = %v %q, want %v %q", tc.url, tc.home, pass, got, tc.pass, tc.outcome)
		}
		if s != nil && s.complete != (got == data.OutcomeOK) {
			t.Errorf("gate(%s): complete %v", tc.url, s.complete)
		}
	}
}

func TestOffSite(t *testing.T) {
	c, err := NewCrawler(testCrawlerOptions())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		url     string
		home    bool
		on      bool
		outcome data.Outcome
		links   []string
	}{
		{"https://www.a.test/x", true, true, "", nil},
		{"https://b.test/", false, false, "", nil},
		{"https://www.b.test/", true, false, data.OutcomeMoved, []string{"b.test"}},
		{"http://127.0.0.1/", true, false, data.OutcomeConnectError, nil},
		{"http://127.0.0.1/", false, false, "", nil},
	}
	for _, tc := range tests {
		v := &visit{c: c, domain: "a.test", links: newLinkSet()}
		u, _ := url.Parse(tc.url)
		s, on := v.offSite(u, tc.home)
		got := data.Outcome("")
		if s != nil {
			got = s.outcome
		}
		if on != tc.on || got != tc.outcome {
			t.Errorf("offSite(%s, home %v) = %v %q, want %v %q", tc.url, tc.home, on, got, tc.on, tc.outcome)
		}
		var links []string
		for _, l := range v.links.result(0) {
			links = append(links, l.Dst)
		}
		if fmt.Sprint(links) != fmt.Sprint(tc.links) {
			t.Errorf("offSite(%s): links %v, want %v", tc.url, links, tc.links)
		}
	}
}
