package simweb

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fixedNow is the injected clock of the server tests.
var fixedNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func startWeb(t *testing.T, cfg Config) (*Web, *http.Client) {
	t.Helper()
	w := newWeb(t, cfg)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	tr := w.Transport()
	t.Cleanup(tr.CloseIdleConnections)
	return w, &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

type fetched struct {
	status int
	header http.Header
	body   string
	gzip   bool
}

func get(t *testing.T, c *http.Client, url string) (fetched, error) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("User-Agent", "MapTheNetBot/1.0 (+https://www.mapthenet.org/bot)")
	req.Header.Set("Signature", "sig1=:AAAA:")
	req.Header.Set("Signature-Input", `sig1=("@authority" "signature-agent";key="sig1");tag="web-bot-auth"`)
	req.Header.Set("Signature-Agent", `sig1="https://www.mapthenet.org"`)
	resp, err := c.Do(req)
	if err != nil {
		return fetched{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fetched{}, err
	}
	return fetched{resp.StatusCode, resp.Header, string(b), resp.Uncompressed}, nil
}

func TestResponses(t *testing.T) {
	w, c := startWeb(t, Config{Seed: 1, Sites: 3, Clock: func() time.Time { return fixedNow }, SlowDelay: time.Millisecond})
	retryDate := fixedNow.Add(2 * time.Hour).Format(http.TimeFormat)
	cases := []struct {
		url    string
		status int
		header map[string]string // "" value: header must be absent
		body   []string
	}{
		{"https://s00000.example/", 200, map[string]string{"Content-Type": "text/html; charset=utf-8"}, []string{`rel="alternate"`, `href="/p/1"`}},
		{"http://s00000.example/p/1", 200, nil, []string{"<nav>"}},
		{"https://s00000.example/feed.xml", 200, map[string]string{"Content-Type": "application/rss+xml"}, []string{"<rss", "<item>"}},
		{"https://s00001.example/atom.xml", 200, map[string]string{"Content-Type": "application/atom+xml"}, []string{"<feed", "<entry>"}},
		{"https://s00002.example/feed.json", 200, map[string]string{"Content-Type": "application/feed+json"}, []string{`"version":"https://jsonfeed.org/version/1.1"`}},
		{"https://s00000.example/robots.txt", 200, map[string]string{"Content-Type": "text/plain; charset=utf-8"}, []string{"User-agent: *\nDisallow: /admin/\n"}},
		{"https://s00000.example/no-such-page", 404, nil, nil},
		{"https://robots-5xx.example/robots.txt", 500, nil, nil},
		{"https://robots-404.example/robots.txt", 404, nil, nil},
		{"https://robots-redirect-5.example/robots.txt", 301, map[string]string{"Location": "/robots.txt?hop=1"}, nil},
		{"https://robots-redirect-5.example/robots.txt?hop=4", 301, map[string]string{"Location": "/robots.txt?hop=5"}, nil},
		{"https://robots-redirect-5.example/robots.txt?hop=5", 200, nil, []string{"User-agent"}},
		{"https://robots-redirect-6.example/robots.txt?hop=5", 302, map[string]string{"Location": "/robots.txt?hop=6"}, nil},
		{"https://robots-rules.example/robots.txt", 200, nil, []string{"User-agent: MapTheNetBot\n", "Disallow: /*.php$\n", "Disallow: /caf%C3%A9/\n", "User-agent: *\nDisallow: /\n"}},
		{"https://robots-rules.example/caf%C3%A9/menu", 200, nil, []string{neverRead}},
		{"https://crawl-delay.example/robots.txt", 200, nil, []string{"Crawl-delay: 2\n"}},
		{"https://opted-out.example/robots.txt", 200, nil, []string{"User-agent: MapTheNetBot\nDisallow: /\n"}},
		{"https://throttle-429.example/", 429, map[string]string{"Retry-After": "120"}, nil},
		{"https://throttle-429-date.example/", 200, map[string]string{"Retry-After": ""}, nil},
		{"https://throttle-429-date.example/p/1", 429, map[string]string{"Retry-After": retryDate}, nil},
		{"https://throttle-503.example/", 503, nil, nil},
		{"https://challenge-cf.example/", 403, map[string]string{"Cf-Mitigated": "challenge", "Server": "cloudflare"}, []string{"<title>Just a moment...</title>", "_cf_chl_opt"}},
		{"https://challenge-cf.example/robots.txt", 200, nil, nil},
		{"https://challenge-generic.example/p/2", 403, map[string]string{"Cf-Mitigated": ""}, []string{"<title>Just a moment...</title>"}},
		{"https://meta-robots.example/m/noindex-meta", 200, nil, []string{`<meta name="robots" content="noindex">`}},
		{"https://meta-robots.example/m/none-meta", 200, nil, []string{`<meta name="MapTheNetBot" content="none">`}},
		{"https://meta-robots.example/m/nofollow-meta", 200, nil, []string{`<meta name="mapthenetbot" content="nofollow">`}},
		{"https://meta-robots.example/m/noindex-header", 200, map[string]string{"X-Robots-Tag": "noindex"}, nil},
		{"https://meta-robots.example/m/nofollow-header", 200, map[string]string{"X-Robots-Tag": "mapthenetbot: nofollow"}, nil},
		{"https://meta-robots.example/m/other-bots", 200, map[string]string{"X-Robots-Tag": "googlebot: noindex, nofollow"}, []string{`<meta name="googlebot"`}},
		{"https://rel.example/", 200, nil, []string{`rel="nofollow"`, `rel="ugc"`, `rel="sponsored"`, `rel="external UGC"`}},
		{"https://home-500.example/", 500, nil, nil},
		{"https://gone-404.example/", 404, nil, nil},
		{"https://gone-410.example/", 410, nil, nil},
		{"https://redirect-loop.example/", 302, map[string]string{"Location": "/loop"}, nil},
		{"https://redirect-loop.example/loop", 302, map[string]string{"Location": "/"}, nil},
		{"https://moved.example/", 301, map[string]string{"Location": "https://moved-here.example/"}, nil},
		{"https://non-html.example/img/photo.png", 200, map[string]string{"Content-Type": "image/png"}, []string{"\x89PNG"}},
		{"https://non-html.example/pixel", 200, map[string]string{"Content-Type": "image/png"}, nil},
		{"https://non-html.example/report.html", 200, map[string]string{"Content-Type": "application/octet-stream"}, []string{"<title>report</title>"}},
		{"https://non-html.example/loop-a", 302, map[string]string{"Location": "/loop-b"}, nil},
		{"https://calendar.example/calendar/2026/12", 200, nil, []string{`href="/calendar/2027/01"`}},
		{"https://calendar.example/calendar/2026/13", 404, nil, nil},
		{"https://calendar.example/calendar/2026/1", 404, nil, nil},
		{"https://www-redirect.example/p/1?x=1", 301, map[string]string{"Location": "https://www.www-redirect.example/p/1?x=1"}, nil},
		{"https://www.www-redirect.example/p/1", 200, nil, nil},
		{"https://www.www-only.example/", 200, nil, nil},
		{"https://multi-host.example/", 200, nil, []string{"https://blog.multi-host.example/"}},
		{"https://blog.multi-host.example/robots.txt", 200, nil, []string{"Disallow: /drafts/"}},
		{"https://www.multi-host.example/p/2", 301, map[string]string{"Location": "https://multi-host.example/p/2"}, nil},
		{"https://alice.github.io/", 200, nil, []string{"github.io"}},
		{"http://http-only.example/", 200, nil, nil},
		{"http://bad-cert.example/", 200, nil, nil},
		{"https://slow.example/", 200, nil, nil},
		{"http://nowhere.example/", 421, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.url, func(t *testing.T) {
			got, err := get(t, c, tc.url)
			if err != nil {
				t.Fatal(err)
			}
			if got.status != tc.status {
				t.Errorf("status %d, want %d", got.status, tc.status)
			}
			for k, v := range tc.header {
				if g := got.header.Get(k); g != v {
					t.Errorf("%s: %q, want %q", k, g, v)
				}
			}
			for _, s := range tc.body {
				if !strings.Contains(got.body, s) {
					t.Errorf("body lacks %q", s)
				}
			}
		})
	}
	// Every request was logged, with the crawler's headers.
	reqs := w.Requests()
	if len(reqs) != len(cases) {
		t.Fatalf("%d requests logged, want %d", len(reqs), len(cases))
	}
	for _, r := range reqs {
		if r.UserAgent == "" || r.Signature == "" || r.SignatureInput == "" || r.SignatureAgent == "" || r.Status == 0 || !r.Start.Equal(fixedNow) {
			t.Errorf("log entry %+v", r)
		}
	}
	if r := reqs[0]; r.Host != "s00000.example" || r.Site != "s00000.example" || r.Scheme != "https" || r.Path != "/" || r.Method != "GET" {
		t.Errorf("first entry %+v", r)
	}
	w.Reset()
	if len(w.Requests()) != 0 {
		t.Error("Reset left requests")
	}
}

// The same port speaks TLS and plain HTTP; TLS only with our CA and only
// for hosts that have it.
func TestTLSSniffing(t *testing.T) {
	w, c := startWeb(t, Config{Seed: 1, Sites: 1})
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"https://s00000.example/", true},
		{"http://s00000.example/", true},
		{"https://http-only.example/", false}, // handshake fails
		{"https://bad-cert.example/", false},  // untrusted certificate
		{"https://nowhere.example/", false},   // no certificate for unknown names
		{"http://www-only.example/", false},   // connection closed unanswered
		{"https://www-only.example/", false},
		{"https://www.www-only.example/", true},
	} {
		_, err := get(t, c, tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("%s: error %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
	// A real TLS client with the CA file's certificate and SNI.
	conn, err := tls.Dial("tcp", w.Addr(), &tls.Config{RootCAs: w.CertPool(), ServerName: "robots-rules.example"})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if cs := conn.ConnectionState(); cs.PeerCertificates[0].DNSNames[0] != "robots-rules.example" {
		t.Errorf("certificate for %v", cs.PeerCertificates[0].DNSNames)
	}
	var bad *tls.CertificateVerificationError
	_, err = tls.Dial("tcp", w.Addr(), &tls.Config{RootCAs: w.CertPool(), ServerName: "bad-cert.example"})
	if !errors.As(err, &bad) {
		t.Errorf("bad-cert.example: %v, want a verification error", err)
	}
	if w.ConnectTo() != "::"+w.Addr() {
		t.Errorf("ConnectTo %q", w.ConnectTo())
	}
}

// A 3 MB page, gzip-encoded when the client asks for it.
func TestBigPage(t *testing.T) {
	_, c := startWeb(t, Config{Seed: 1, Sites: 1})
	got, err := get(t, c, "https://big-page.example/big")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.body) < 3<<20 || !got.gzip {
		t.Errorf("%d bytes, gzip %v", len(got.body), got.gzip)
	}
	late := strings.Index(got.body, neverRead)
	if late < MaxBodyBytes {
		t.Errorf("the late link is at %d, within the first %d bytes", late, MaxBodyBytes)
	}
}

// A hanging robots.txt answers nothing until the client gives up; Close
// waits for the handler, which logs the request as aborted.
func TestRobotsHang(t *testing.T) {
	w, c := startWeb(t, Config{Seed: 1, Sites: 1})
	// A first request opens (and keeps) the connection, so that the timeout
	// below runs out in the handler, not in the TLS handshake.
	if _, err := get(t, c, "https://robots-hang.example/"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://robots-hang.example/robots.txt", nil)
	if resp, err := c.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a hanging robots.txt answered %d %v", resp.StatusCode, resp.Header)
	}
	c.CloseIdleConnections()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	reqs := w.Requests()
	if len(reqs) != 2 || reqs[1].Path != "/robots.txt" || !reqs[1].Aborted || reqs[1].Status != 0 {
		t.Errorf("log %+v", reqs)
	}
}

// Close ends a request that hangs while its client still waits, and leaves
// no goroutine of the web behind.
func TestCloseLeavesNothing(t *testing.T) {
	w, c := startWeb(t, Config{Seed: 1, Sites: 1})
	done := make(chan error, 1)
	go func() {
		_, err := get(t, c, "https://robots-hang.example/robots.txt")
		done <- err
	}()
	for len(w.Requests()) == 0 && !inFlight(w) {
		runtime.Gosched()
	}
	// An idle connection that never sends a byte (waiting to be sniffed).
	idle, err := net.Dial("tcp", w.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil {
		t.Error("the hanging request succeeded")
	}
	c.CloseIdleConnections()
	// A connection's goroutine reports itself closed just before it
	// returns: give the scheduler a moment, as goleak does.
	s := webGoroutines()
	for deadline := time.Now().Add(2 * time.Second); s != "" && time.Now().Before(deadline); s = webGoroutines() {
		time.Sleep(time.Millisecond)
	}
	if s != "" {
		t.Errorf("goroutines left after Close:\n%s", s)
	}
}

// inFlight reports whether the server holds a connection in a handler.
func inFlight(w *Web) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.conns) > 0
}

// webGoroutines returns the stacks of goroutines that belong to a web's
// server side, if any remain.
func webGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "simweb.(*sniffListener)") || strings.Contains(g, "net/http.(*conn).serve") ||
			strings.Contains(g, "net/http.(*Server).Serve") || strings.Contains(g, "simweb.(*Web).ServeHTTP") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

func TestWarmCertificates(t *testing.T) {
	w := newWeb(t, Config{Seed: 1, Sites: 20})
	if err := w.WarmCertificates(); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, s := range w.world.sites {
		for _, h := range s.hosts {
			if h.tls == tlsOK {
				n++
			}
		}
	}
	if len(w.ca.leaves) != n || len(w.rogue.leaves) != 1 {
		t.Errorf("%d and %d certificates, want %d and 1", len(w.ca.leaves), len(w.rogue.leaves), n)
	}
}

// The first request of a connection is stamped with the connection's
// accept time; later ones with the time their headers were read.
func TestStartIsAcceptForFirstRequest(t *testing.T) {
	var ticks atomic.Int64
	clock := func() time.Time { return fixedNow.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	w, c := startWeb(t, Config{Seed: 1, Sites: 1, Clock: clock})
	for _, u := range []string{"https://s00000.example/robots.txt", "https://s00000.example/"} {
		if _, err := get(t, c, u); err != nil {
			t.Fatal(err)
		}
	}
	reqs := w.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	if first := reqs[0]; !first.Start.Before(first.Received) {
		t.Errorf("first request: start %v, received %v", first.Start, first.Received)
	}
	if second := reqs[1]; !second.Start.Equal(second.Received) {
		t.Errorf("second request on the connection: start %v, received %v", second.Start, second.Received)
	}
}

// robots-huge.example's own group starts past 500 KiB: a crawler parsing
// at most that much never sees it, so /late/ is allowed.
func TestRobotsHuge(t *testing.T) {
	w, c := startWeb(t, Config{Seed: 1, Sites: 1})
	got, err := get(t, c, "https://robots-huge.example/robots.txt")
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.Index(got.body, "User-agent: MapTheNetBot\nDisallow: /late/\n"); i < MaxRobotsBytes {
		t.Errorf("our group at byte %d, want past %d", i, MaxRobotsBytes)
	}
	if v := w.CheckRobotsAllowed([]Request{{Host: "robots-huge.example", Site: "robots-huge.example", Path: "/late/page"}}); len(v) > 0 {
		t.Errorf("/late/page disallowed: %v", v)
	}
	if w.ExpectedPages("robots-huge.example") != 7 {
		t.Errorf("robots-huge.example: %d pages expected", w.ExpectedPages("robots-huge.example"))
	}
}
