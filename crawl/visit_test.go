package crawl

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/data"
)

func visitOf(t *testing.T, w *web, opts Options, domain string, pages int) *data.VisitResult {
	t.Helper()
	res, err := w.crawler(opts).Visit(context.Background(), domain, pages)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range w.requests() {
		if strings.HasSuffix(r, "UNSIGNED") {
			t.Errorf("unsigned request: %s", r)
		}
	}
	if strings.Contains(res.Error, "127.0.0.1") || strings.Contains(res.Error, "http") {
		t.Errorf("error %q names an address", res.Error)
	}
	return res
}

func dsts(ls []data.Link) []string {
	var out []string
	for _, l := range ls {
		s := l.Dst
		if l.Nofollow {
			s += " nofollow"
		}
		if l.Sitewide {
			s += " sitewide"
		}
		out = append(out, s)
	}
	return out
}

func TestVisitOK(t *testing.T) {
	w := newWeb(t)
	w.text("a.test/robots.txt", 200, "User-agent: *\nDisallow: /private\n")
	w.html("a.test/", htmlPage("/p1", "/p2", "/private/x", "/img.png", "https://b.test/|Bee Site", "http://c.test/x", "//d.test/"))
	w.html("a.test/p1", htmlPage("https://b.test/", "/p2", "/p3"))
	w.html("a.test/p2", htmlPage("https://b.test/", `http://e.test/" rel="nofollow`))
	w.html("a.test/p3", htmlPage("https://b.test/"))
	res := visitOf(t, w, w.options(), "a.test", 8)

	if res.Outcome != data.OutcomeOK || !res.Complete || res.Pages != 4 || res.HTTPStatus != 200 || res.RobotsStatus != 200 {
		t.Fatalf("got %+v", res)
	}
	want := []string{"b.test sitewide", "c.test", "d.test", "e.test nofollow"}
	if got := dsts(res.Links); !reflect.DeepEqual(got, want) {
		t.Errorf("links %v, want %v", got, want)
	}
	if *res.HTTPS {
		t.Error("https true over plain http")
	}
	if res.Links[0].Words == nil || res.Links[0].Words[0] != "bee" {
		t.Errorf("words %v", res.Links[0].Words)
	}
	reqs := w.requests()
	for _, r := range reqs {
		if strings.Contains(r, "/private") || strings.Contains(r, "img.png") {
			t.Errorf("requested %s", r)
		}
	}
	if !strings.HasSuffix(reqs[0], "/robots.txt") {
		t.Errorf("first request %s, want robots.txt", reqs[0])
	}
}

func TestVisitPageBudget(t *testing.T) {
	w := newWeb(t)
	w.html("a.test/", htmlPage("/1", "/2", "/3", "/4", "/5"))
	w.html("a.test", htmlPage("https://b.test/"))
	res := visitOf(t, w, w.options(), "a.test", 3)
	if res.Pages != 3 || res.Outcome != data.OutcomeOK {
		t.Fatalf("pages %d outcome %s", res.Pages, res.Outcome)
	}
	// robots.txt (404: no restrictions) + 3 pages
	if n := len(w.requests()); n != 4 {
		t.Fatalf("%d requests: %v", n, w.requests())
	}
}

func TestVisitOptedOut(t *testing.T) {
	w := newWeb(t)
	w.text("a.test/robots.txt", 200, "User-agent: MapTheNetBot\nDisallow: /\n\nUser-agent: *\nAllow: /\n")
	w.html("a.test/", htmlPage("https://b.test/"))
	res := visitOf(t, w, w.options(), "a.test", 8)
	if res.Outcome != data.OutcomeOptedOut || !res.OptedOut || res.Pages != 0 {
		t.Fatalf("%+v", res)
	}
	if got := w.requests(); len(got) != 1 || !strings.HasSuffix(got[0], "/robots.txt") {
		t.Fatalf("requests %v, want robots.txt alone", got)
	}
}

func TestVisitRobotsStatuses(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(w *web)
		outcome data.Outcome
		status  int
		pages   int
	}{
		{"404 no restrictions", func(w *web) {}, data.OutcomeOK, 404, 1},
		{"403 no restrictions", func(w *web) { w.text("a.test/robots.txt", 403, "") }, data.OutcomeOK, 403, 1},
		{"500 unavailable", func(w *web) { w.text("a.test/robots.txt", 500, "") }, data.OutcomeRobotsUnavailable, 500, 0},
		{"503 unavailable", func(w *web) { w.text("a.test/robots.txt", 503, "") }, data.OutcomeRobotsUnavailable, 503, 0},
		{"429 throttled", func(w *web) {
			w.on("a.test/robots.txt", func(rw http.ResponseWriter, r *http.Request) {
				rw.Header().Set("Retry-After", "7200")
				rw.WriteHeader(429)
			})
		}, data.OutcomeThrottled, 429, 0},
		{"redirect followed", func(w *web) {
			w.redirect("a.test/robots.txt", 301, "/r1")
			w.redirect("a.test/r1", 302, "http://www.a.test/robots.txt")
			w.text("www.a.test/robots.txt", 200, "User-agent: *\nDisallow: /\n")
		}, data.OutcomeOptedOut, 200, 0},
		{"five redirects", func(w *web) {
			for i, from := range []string{"/robots.txt", "/r1", "/r2", "/r3", "/r4"} {
				w.redirect("a.test"+from, 301, "/r"+string(rune('1'+i)))
			}
			w.text("a.test/r5", 200, "User-agent: *\nDisallow: /\n")
		}, data.OutcomeOptedOut, 200, 0},
		{"six redirects", func(w *web) {
			for i, from := range []string{"/robots.txt", "/r1", "/r2", "/r3", "/r4", "/r5"} {
				w.redirect("a.test"+from, 301, "/r"+string(rune('1'+i)))
			}
			w.text("a.test/r6", 200, "User-agent: *\nDisallow: /\n")
		}, data.OutcomeRobotsUnavailable, 301, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWeb(t)
			w.html("a.test/", htmlPage("https://b.test/"))
			tc.setup(w)
			res := visitOf(t, w, w.options(), "a.test", 8)
			if res.Outcome != tc.outcome || res.RobotsStatus != tc.status || res.Pages != tc.pages {
				t.Fatalf("outcome %s robots %d pages %d (%s); want %s %d %d\n%v", res.Outcome, res.RobotsStatus, res.Pages, res.Error, tc.outcome, tc.status, tc.pages, w.requests())
			}
			if res.RobotsReadAt.IsZero() {
				t.Error("robots_read_at not set")
			}
			if tc.outcome == data.OutcomeThrottled && res.RetryAfter != 2*time.Hour {
				t.Errorf("retry after %v", res.RetryAfter)
			}
			if tc.pages == 0 {
				for _, r := range w.requests() {
					if strings.Contains(r, "a.test/ ") {
						t.Errorf("home page requested: %v", w.requests())
					}
				}
			}
		})
	}
}

func TestVisitRobotsTimeout(t *testing.T) {
	w := newWeb(t)
	block := make(chan struct{})
	defer close(block)
	w.on("a.test/robots.txt", func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	opts := w.options()
	opts.ResponseTimeout = 100 * time.Millisecond
	res := visitOf(t, w, opts, "a.test", 8)
	if res.Outcome != data.OutcomeRobotsUnavailable || res.Error != "robots.txt: timeout" {
		t.Fatalf("%s %q", res.Outcome, res.Error)
	}
}

func TestVisitHomeOutcomes(t *testing.T) {
	tests := []struct {
		name    string
		home    http.HandlerFunc
		outcome data.Outcome
		status  int
	}{
		{"404 gone", status(404, ""), data.OutcomeGone, 404},
		{"410 gone", status(410, ""), data.OutcomeGone, 410},
		{"500 http_error", status(500, ""), data.OutcomeHTTPError, 500},
		{"403 http_error", status(403, "forbidden"), data.OutcomeHTTPError, 403},
		{"429 throttled", status(429, ""), data.OutcomeThrottled, 429},
		{"503 throttled", status(503, ""), data.OutcomeThrottled, 503},
		{"cf-mitigated", func(rw http.ResponseWriter, r *http.Request) {
			rw.Header().Set("cf-mitigated", "challenge")
			rw.WriteHeader(403)
		}, data.OutcomeBotProtection, 403},
		{"just a moment", status(503, "<html><head><title>Just a moment...</title></head></html>"), data.OutcomeBotProtection, 503},
		{"attention required", status(403, "<title>Attention Required! | Cloudflare</title>"), data.OutcomeBotProtection, 403},
		{"datadome", status(403, `<script src="https://ct.captcha-delivery.com/c.js"></script>`), data.OutcomeBotProtection, 403},
		{"imperva", status(403, "Request unsuccessful. Incapsula incident ID: 123"), data.OutcomeBotProtection, 403},
		{"sucuri", status(403, "<title>Sucuri WebSite Firewall - Access Denied</title>"), data.OutcomeBotProtection, 403},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWeb(t)
			w.on("a.test/", tc.home)
			res := visitOf(t, w, w.options(), "a.test", 8)
			if res.Outcome != tc.outcome || res.HTTPStatus != tc.status || res.Complete || res.Pages != 1 {
				t.Fatalf("outcome %s status %d complete %v pages %d; want %s %d", res.Outcome, res.HTTPStatus, res.Complete, res.Pages, tc.outcome, tc.status)
			}
			if res.Error == "" {
				t.Error("no error reason")
			}
		})
	}
}

func status(code int, body string) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		rw.WriteHeader(code)
		rw.Write([]byte(body))
	}
}

func TestVisitRetryAfterDate(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	h := http.Header{"Retry-After": {now.Add(3 * time.Hour).Format(http.TimeFormat)}}
	if got := retryAfter(h, now); got != 3*time.Hour {
		t.Fatalf("%v", got)
	}
	for _, v := range []string{"", "soon", "-5"} {
		if got := retryAfter(http.Header{"Retry-After": {v}}, now); got != 0 {
			t.Errorf("%q: %v", v, got)
		}
	}
}

func TestVisitNetworkOutcomes(t *testing.T) {
	w := newWeb(t)
	opts := w.options()
	opts.Resolver = stubResolver{missing: map[string]bool{"gone.test": true, "www.gone.test": true}}
	opts.ConnectTo = append(opts.ConnectTo[:0:0], opts.ConnectTo...)
	// refused.test: a port nothing listens on.
	opts.ConnectTo = append([]ConnectTo{{Host: "refused.test", ToPort: "1"}, {Host: "www.refused.test", ToPort: "1"}}, opts.ConnectTo...)
	res := visitOf(t, w, opts, "gone.test", 8)
	if res.Outcome != data.OutcomeDNSError || res.Error != "dns: no such host" || !res.RobotsReadAt.IsZero() {
		t.Errorf("dns: %+v", res)
	}
	res = visitOf(t, w, opts, "refused.test", 8)
	if res.Outcome != data.OutcomeConnectError || res.Error != "connection refused" {
		t.Errorf("refused: %+v", res)
	}
}

func TestVisitWWWFallback(t *testing.T) {
	w := newWeb(t)
	opts := w.options()
	opts.Resolver = stubResolver{missing: map[string]bool{"a.test": true}}
	w.html("www.a.test/", htmlPage("https://b.test/"))
	res := visitOf(t, w, opts, "a.test", 8)
	if res.Outcome != data.OutcomeOK || len(res.Links) != 1 {
		t.Fatalf("%+v %v", res, w.requests())
	}
	if got := w.requests(); got[0] != "www.a.test /robots.txt" {
		t.Fatalf("%v", got)
	}
}

func TestVisitMoved(t *testing.T) {
	w := newWeb(t)
	w.redirect("a.test/", 301, "https://www.b.test/")
	res := visitOf(t, w, w.options(), "a.test", 8)
	if res.Outcome != data.OutcomeMoved || res.HTTPStatus != 301 || !reflect.DeepEqual(dsts(res.Links), []string{"b.test"}) {
		t.Fatalf("%+v", res)
	}
	for _, r := range w.requests() {
		if strings.HasPrefix(r, "www.b.test") {
			t.Errorf("followed into the other site: %s", r)
		}
	}
}

func TestVisitRedirectsOnSite(t *testing.T) {
	w := newWeb(t)
	// The home page moves to www. on the same site: robots.txt of www. is
	// read before its first page, and each hop is a request but not a page.
	w.redirect("a.test/", 301, "http://www.a.test/")
	w.text("www.a.test/robots.txt", 200, "User-agent: *\nDisallow: /no\n")
	w.html("www.a.test/", htmlPage("/no", "/loop", "https://b.test/"))
	for i := range 6 {
		w.redirect("www.a.test/loop"+strings.Repeat("x", i), 302, "/loop"+strings.Repeat("x", i+1))
	}
	res := visitOf(t, w, w.options(), "a.test", 8)
	if res.Outcome != data.OutcomeOK || res.Pages != 1 {
		t.Fatalf("%+v\n%v", res, w.requests())
	}
	got := strings.Join(w.requests(), "\n")
	want := strings.Join([]string{
		"a.test /robots.txt", "a.test /", "www.a.test /robots.txt", "www.a.test /",
		"www.a.test /loop", "www.a.test /loopx", "www.a.test /loopxx", "www.a.test /loopxxx", "www.a.test /loopxxxx", "www.a.test /loopxxxxx",
	}, "\n")
	if got != want {
		t.Fatalf("requests:\n%s\nwant:\n%s", got, want)
	}
}

// A 429 on page 3: throttled (the wait applies), the links of pages 1 and 2 kept.
func TestVisitThrottledMidway(t *testing.T) {
	w := newWeb(t)
	w.html("a.test/", htmlPage("/1", "/2", "https://b.test/"))
	w.html("a.test/1", htmlPage("https://c.test/"))
	w.on("a.test/2", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Retry-After", "60")
		rw.WriteHeader(429)
	})
	res := visitOf(t, w, w.options(), "a.test", 8)
	if res.Outcome != data.OutcomeThrottled || res.Complete || res.Pages != 3 || res.RetryAfter != time.Minute {
		t.Fatalf("%+v", res)
	}
	if got := dsts(res.Links); !reflect.DeepEqual(got, []string{"b.test", "c.test"}) {
		t.Fatalf("links %v", got)
	}

	// A timeout after the home page: partial, links kept.
	w2 := newWeb(t)
	block := make(chan struct{})
	defer close(block)
	w2.html("a.test/", htmlPage("/slow", "https://b.test/"))
	w2.on("a.test/slow", func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	opts := w2.options()
	opts.ResponseTimeout = 100 * time.Millisecond
	res = visitOf(t, w2, opts, "a.test", 8)
	if res.Outcome != data.OutcomePartial || res.Complete || res.Error != "timeout" || len(res.Links) != 1 {
		t.Fatalf("%+v", res)
	}
}

func TestVisitMetaRobotsAndXRobotsTag(t *testing.T) {
	w := newWeb(t)
	w.html("a.test/", `<html><head><meta name="robots" content="nofollow"></head><body>
		<a href="/never">x</a><a href="https://b.test/">b</a></body></html>`)
	res := visitOf(t, w, w.options(), "a.test", 8)
	if got := dsts(res.Links); !reflect.DeepEqual(got, []string{"b.test nofollow"}) || res.Pages != 1 {
		t.Fatalf("nofollow page: %v pages %d", got, res.Pages)
	}

	w = newWeb(t)
	w.on("a.test/", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		rw.Header().Set("X-Robots-Tag", "mapthenetbot: noindex")
		rw.Write([]byte(htmlPage("/next", "https://b.test/")))
	})
	w.html("a.test/next", htmlPage("https://c.test/"))
	res = visitOf(t, w, w.options(), "a.test", 8)
	if got := dsts(res.Links); !reflect.DeepEqual(got, []string{"c.test"}) || res.Pages != 2 {
		t.Fatalf("noindex page: %v pages %d", got, res.Pages)
	}
}

func TestVisitContentTypesAndFeeds(t *testing.T) {
	w := newWeb(t)
	w.html("a.test/", `<html><head><link rel="alternate" type="application/rss+xml" href="/feed"></head><body>
		<a href="/data">d</a><a href="/p">p</a><a href="/q">q</a></body></html>`)
	w.on("a.test/data", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/octet-stream")
		rw.Write([]byte(strings.Repeat("<a href='https://x.test/'>", 100)))
	})
	w.html("a.test/p", htmlPage("https://b.test/"))
	w.html("a.test/q", htmlPage("https://b.test/"))
	w.on("a.test/feed", func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "application/rss+xml")
		rw.Write([]byte(`<?xml version="1.0"?><rss version="2.0"><channel><link>https://a.test/</link>
			<item><title>Feed Words</title><link>https://f.test/post</link></item></channel></rss>`))
	})
	res := visitOf(t, w, w.options(), "a.test", 8)
	if res.Outcome != data.OutcomeOK || res.Pages != 5 {
		t.Fatalf("%+v %v", res, w.requests())
	}
	// b.test is on all three HTML pages read? No: the home page lacks it.
	if got := dsts(res.Links); !reflect.DeepEqual(got, []string{"b.test", "f.test"}) {
		t.Fatalf("links %v", got)
	}
	if res.Bytes > 4000 {
		t.Errorf("bytes %d: the dropped body was read", res.Bytes)
	}
}

func TestVisitSitewideNeedsThreePagesAndCompleteness(t *testing.T) {
	w := newWeb(t)
	w.html("a.test/", htmlPage("/1", "https://b.test/"))
	w.html("a.test/1", htmlPage("https://b.test/"))
	res := visitOf(t, w, w.options(), "a.test", 8)
	if got := dsts(res.Links); !reflect.DeepEqual(got, []string{"b.test"}) {
		t.Fatalf("two pages: %v", got)
	}
}

type ConnectTo = fetch.ConnectTo

func TestVisitHomeTimeout(t *testing.T) {
	w := newWeb(t)
	block := make(chan struct{})
	defer close(block)
	w.on("a.test/", func(rw http.ResponseWriter, r *http.Request) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	})
	opts := w.options()
	opts.ResponseTimeout = 200 * time.Millisecond
	res := visitOf(t, w, opts, "a.test", 8)
	if res.Outcome != data.OutcomeTimeout || res.Error != "timeout" || res.Pages != 0 || res.Complete {
		t.Fatalf("%+v", res)
	}
}

func TestVisitFacts(t *testing.T) {
	w := newWeb(t)
	w.html("a.test/", htmlPage())
	opts := w.options()
	db, err := ReadASN(strings.NewReader("1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET\n127.0.0.0\t127.255.255.255\t64512\tZZ\tLoopback Net\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts.ASN = db
	res := visitOf(t, w, opts, "a.test", 8)
	if res.IPv6 == nil || *res.IPv6 || res.ASN != 64512 || res.NetworkOperator != "Loopback Net" || res.HTTPS == nil || *res.HTTPS {
		t.Fatalf("facts: ipv6 %v asn %d %q https %v", res.IPv6, res.ASN, res.NetworkOperator, res.HTTPS)
	}
}
