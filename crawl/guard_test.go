package crawl

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
)

// The address guard through whole visits: only a.test on ports 80 and 443
// is mapped to the test web; every name resolves to 127.0.0.1, so the
// guard alone keeps a hostile site's redirects and links from loopback.
// A canary listens on 127.0.0.1 at a port of its own and counts every
// connection it is offered: it must see none.

func (w *web) guardedOptions() Options {
	o := w.options()
	o.ConnectTo = []fetch.ConnectTo{
		{Host: "a.test", Port: "443", ToPort: w.port()},
		{Host: "a.test", Port: "80", ToPort: w.port()},
	}
	return o
}

type canaryListener struct {
	net.Listener
	n *atomic.Int32
}

func (l canaryListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// newCanary returns the canary's port and its count of accepted connections.
func newCanary(t *testing.T) (string, *atomic.Int32) {
	n := new(atomic.Int32)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html")
		rw.Write([]byte(htmlPage("https://canary.test/")))
	}))
	srv.Listener = canaryListener{Listener: srv.Listener, n: n}
	srv.Start()
	t.Cleanup(srv.Close)
	_, p, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return p, n
}

// Item 6: a home page that redirects where the crawler will not go is a
// failure with a backoff, not an empty complete visit.
func TestVisitHomeRedirectNotFetched(t *testing.T) {
	cp, accepts := newCanary(t)
	for _, tc := range []struct{ to, reason string }{
		{"http://127.0.0.1:" + cp + "/", "home page: redirect to an address not fetched"},
		{"http://169.254.169.254/latest/meta-data/", "home page: redirect to an address not fetched"},
		{"http://[::ffff:127.0.0.1]:" + cp + "/", "home page: redirect to an address not fetched"},
		{"http://[64:ff9b::7f00:1]:" + cp + "/", "home page: redirect to an address not fetched"},
		{"https://10.0.0.1/", "home page: redirect to an address not fetched"},
		// Same site, internal address or refused port: its robots.txt is
		// the first request there, and the guard refuses it.
		{"http://www.a.test:" + cp + "/", "robots.txt: no public address"},
		{"http://intranet.a.test/", "robots.txt: no public address"},
		{"http://a.test:25/", "robots.txt: port not allowed"},
		{"https://a.test:6667/", "robots.txt: port not allowed"},
	} {
		w := newWeb(t)
		w.redirect("a.test/", 302, tc.to)
		res := visitOf(t, w, w.guardedOptions(), "a.test", 8)
		if res.Outcome != data.OutcomeConnectError || !res.Outcome.IsFailure() || res.Error != tc.reason ||
			res.Complete || res.Links != nil || res.HTTPStatus != 302 {
			t.Errorf("redirect to %s: %+v, want connect_error %q, no links", tc.to, res, tc.reason)
		}
		if reqs := w.requests(); len(reqs) != 2 || reqs[1] != "a.test /" {
			t.Errorf("redirect to %s: requests %v", tc.to, reqs)
		}
	}
	if accepts.Load() != 0 {
		t.Fatalf("the canary saw %d connections", accepts.Load())
	}
}

// ... and it leaves the domain's edges as they were, and backs off.
func TestVisitHomeRedirectKeepsEdges(t *testing.T) {
	w := newWeb(t)
	w.html("a.test/", htmlPage("https://b.test/"))
	s := openStore(t)
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	opts := w.guardedOptions()
	opts.Clock = clock
	visitAndRecord := func() *data.VisitResult {
		res := visitOf(t, w, opts, "a.test", 8)
		if err := s.RecordVisit(res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := visitAndRecord(); res.Outcome != data.OutcomeOK {
		t.Fatalf("first visit %+v", res)
	}
	clock.Advance(30 * 24 * time.Hour)
	w.redirect("a.test/", 301, "http://192.168.1.1/")
	if res := visitAndRecord(); res.Outcome != data.OutcomeConnectError {
		t.Fatalf("second visit %+v", res)
	}
	st, _, err := s.Domain("a.test")
	if err != nil {
		t.Fatal(err)
	}
	if st.LastOutcome != data.OutcomeConnectError || st.Failures != 1 || !schedule.RetryAt(&st).After(st.LastVisit) {
		t.Errorf("state %+v: want a failure with a backoff", st)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	edges := 0
	if err := sn.Edges(func(e *data.EdgeRecord) error {
		if e.SrcID == st.ID {
			edges++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if edges != 1 {
		t.Errorf("a.test has %d out-edges after the failed visit, want its 1", edges)
	}
}

// robots.txt redirects: to the cloud metadata address, to loopback by
// address and by a name resolving there. None is followed into a
// connection; with every address of the site refused too, the visit is a
// connect_error saying so.
func TestVisitRobotsRedirectGuarded(t *testing.T) {
	cp, accepts := newCanary(t)
	for _, to := range []string{
		"http://169.254.169.254/latest/meta-data/",
		"http://127.0.0.1:" + cp + "/robots.txt",
		"http://[::1]:" + cp + "/robots.txt",
		"http://metadata.b.test:" + cp + "/robots.txt",
	} {
		w := newWeb(t)
		w.redirect("a.test/robots.txt", 301, to)
		w.html("a.test/", htmlPage("https://b.test/"))
		res := visitOf(t, w, w.guardedOptions(), "a.test", 8)
		if !res.Outcome.IsFailure() || res.Error != "no public address" || res.Pages != 0 {
			t.Errorf("robots.txt to %s: %+v", to, res)
		}
		for _, r := range w.requests() {
			if !strings.HasSuffix(r, "/robots.txt") {
				t.Errorf("robots.txt to %s: requested %s", to, r)
			}
		}
	}
	if accepts.Load() != 0 {
		t.Fatalf("the canary saw %d connections", accepts.Load())
	}
}

// Same-site links and feeds on another port, or on a host of the site that
// resolves to loopback, are not fetched; the mapped pages still are (the
// positive control).
func TestVisitSameSiteLinksGuarded(t *testing.T) {
	cp, accepts := newCanary(t)
	w := newWeb(t)
	w.html("a.test/", `<html><head><link rel="alternate" type="application/rss+xml" href="http://a.test:`+cp+`/feed"></head><body>`+
		htmlPage("/p1", "http://a.test:"+cp+"/x", "http://www.a.test:"+cp+"/y", "http://www.a.test/z",
			"http://a.test:25/mail", "https://a.test:6000/x11", "http://127.0.0.1:"+cp+"/w")+`</body></html>`)
	w.html("a.test/p1", htmlPage("https://c.test/"))
	res := visitOf(t, w, w.guardedOptions(), "a.test", 8)
	if res.Outcome != data.OutcomeOK || res.Pages != 2 || len(res.Links) != 1 || res.Links[0].Dst != "c.test" {
		t.Fatalf("%+v, want ok with a.test/ and /p1 read, the link to c.test", res)
	}
	if accepts.Load() != 0 {
		t.Fatalf("the canary saw %d connections", accepts.Load())
	}
}

// A domain whose every address is refused: connect_error, a reason with no
// address in it, and nothing requested.
func TestVisitNoPublicAddress(t *testing.T) {
	w := newWeb(t)
	w.html("c.test/", htmlPage("https://b.test/"))
	res := visitOf(t, w, w.guardedOptions(), "c.test", 8)
	if res.Outcome != data.OutcomeConnectError || res.Error != "no public address" || res.Complete || res.Pages != 0 {
		t.Fatalf("%+v", res)
	}
	if reqs := w.requests(); len(reqs) != 0 {
		t.Fatalf("requested %v", reqs)
	}
	if d := schedule.Backoff(res.Outcome, 1, 0); d != 24*time.Hour {
		t.Fatalf("backoff %v, want the usual day", d)
	}
	// With no www. host at all, the reason is still the refused address.
	opts := w.guardedOptions()
	opts.Resolver = stubResolver{missing: map[string]bool{"www.c.test": true}}
	res = visitOf(t, w, opts, "c.test", 8)
	if res.Outcome != data.OutcomeConnectError || res.Error != "no public address" {
		t.Fatalf("no www.: %+v", res)
	}
}
