package site

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/removal"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// testSite serves a fixture snapshot from a fresh data directory.
type testSite struct {
	t     *testing.T
	dir   string
	w     *world
	s     *Server
	http  *httptest.Server
	check *fakeChecker
}

type fakeChecker struct {
	mu     sync.Mutex
	proven map[string]bool
	calls  int
}

func (f *fakeChecker) Check(_ context.Context, domain, token string) *removal.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	a := removal.Attempt{Kind: "dns", Detail: "no TXT records on " + domain}
	if f.proven[domain] {
		a = removal.Attempt{Kind: "dns", OK: true, Detail: "TXT record found", Proof: "dns: TXT " + token}
	}
	return &removal.Result{Domain: domain, Token: token, Attempts: []removal.Attempt{a}}
}

func newTestSite(t *testing.T, fx fixture, edit func(*Options)) *testSite {
	t.Helper()
	ts := &testSite{t: t, dir: t.TempDir(), check: &fakeChecker{proven: map[string]bool{}}}
	ts.w = writeFixture(t, ts.dir, fx)
	secret := []byte("0123456789abcdef0123456789abcdef")
	o := Options{DataDir: ts.dir, Contact: "crawler@example.org", Checker: ts.check,
		RemovalSecret: func() ([]byte, error) { return secret, nil }}
	if edit != nil {
		edit(&o)
	}
	s, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	ts.s = s
	ts.http = httptest.NewServer(s)
	t.Cleanup(func() {
		ts.http.Close()
		s.Close()
	})
	return ts
}

// get fetches path and returns the status, headers and body (decompressed).
func (ts *testSite) get(path string) (int, http.Header, string) {
	ts.t.Helper()
	return ts.do("GET", path, nil)
}

func (ts *testSite) do(method, path string, hdr map[string]string) (int, http.Header, string) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.http.URL+path, nil)
	if err != nil {
		ts.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		ts.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if resp.Header.Get("Content-Encoding") == "gzip" && method != "HEAD" {
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			ts.t.Fatalf("%s: bad gzip: %v", path, err)
		}
		r = zr
	}
	body, err := io.ReadAll(r)
	if err != nil {
		ts.t.Fatalf("%s: %v", path, err)
	}
	return resp.StatusCode, resp.Header, string(body)
}

func (ts *testSite) getJSON(path string, v any) int {
	ts.t.Helper()
	status, h, body := ts.get(path)
	if ct := h.Get("Content-Type"); ct != "application/json" {
		ts.t.Errorf("%s: Content-Type %q", path, ct)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		ts.t.Fatalf("%s: %v: %.200s", path, err, body)
	}
	return status
}

func TestRoutes(t *testing.T) {
	ts := newTestSite(t, smallWorld, nil)
	top := ts.w.names[ts.w.ranked[0]]
	second := ts.w.names[ts.w.ranked[1]]
	cases := []struct {
		path   string
		status int
		want   []string // in the body
		typ    string
	}{
		{"/", 200, []string{"<canvas", "/static/map.js?v="}, "text/html; charset=utf-8"},
		{"/static/map.js", 200, []string{"webgl2"}, "text/javascript; charset=utf-8"},
		{"/static/map.css", 200, []string{"#overlay"}, "text/css; charset=utf-8"},
		{"/static/site.css", 200, []string{"dl.facts"}, "text/css; charset=utf-8"},
		{"/rankings", 200, []string{top, second, "page 1 of"}, "text/html; charset=utf-8"},
		{"/rankings?page=2", 200, []string{"rel=\"prev\""}, "text/html; charset=utf-8"},
		{"/d/" + top, 200, []string{top, "Rank <strong id=\"rank\">1</strong>", "Linked from", "Recent visits", "next visit"}, "text/html; charset=utf-8"},
		{"/bot", 200, []string{"Slowing us down", "Crawl-delay", "/remove"}, "text/html; charset=utf-8"},
		{"/remove", 200, []string{"get my token"}, "text/html; charset=utf-8"},
		{"/remove/" + top, 200, []string{"DNS record", "Meta tag", removal.FilePath, "check my proof"}, "text/html; charset=utf-8"},
		{"/api/snapshot", 200, []string{`"snapshot":"` + ts.w.id}, "application/json"},
		{"/api/rankings?limit=2", 200, []string{top, second}, "application/json"},
		{"/api/d/" + top, 200, []string{`"rank":1`, `"in_links"`}, "application/json"},
		{"/api/d/" + top + "/links?dir=in&limit=3", 200, []string{`"dir":"in"`}, "application/json"},
		{"/api/search?q=" + top[:4], 200, []string{`"hits"`}, "application/json"},
		{"/api/map/meta.json", 200, []string{`"colorings"`, `"community"`}, "application/json"},
		{"/api/map/names.txt", 200, []string{top + "\n"}, "text/plain; charset=utf-8"},
		{"/api/map/points.bin", 200, nil, "application/octet-stream"},
		{"/api/map/details.bin", 200, nil, "application/octet-stream"},
		{"/", 200, []string{`rel="preload" href="/api/map/points.bin?s=` + ts.w.id}, "text/html; charset=utf-8"},
		{"/nowhere", 404, []string{"Not found"}, "text/html; charset=utf-8"},
		{"/d/nowhere.example", 404, []string{"nowhere.example", "is not in snapshot"}, "text/html; charset=utf-8"},
		{"/d/not_a..domain", 404, []string{"is not a domain name"}, "text/html; charset=utf-8"},
		{"/d/127.0.0.1", 404, []string{"is not a domain name"}, "text/html; charset=utf-8"},
		{"/api/d/nowhere.example", 404, []string{`"error"`}, "application/json"},
		{"/api/nothing", 404, []string{`"error"`}, "application/json"},
		{"/api/rankings?limit=-1", 400, []string{`"error"`}, "application/json"},
		{"/api/d/" + top + "/links?dir=sideways", 400, []string{`"error"`}, "application/json"},
		{"/rankings?page=0", 400, nil, "text/html; charset=utf-8"},
		{"/rankings?page=99999", 404, nil, "text/html; charset=utf-8"},
		{"/static/nothing.js", 404, nil, "text/html; charset=utf-8"},
	}
	for _, c := range cases {
		status, h, body := ts.get(c.path)
		if status != c.status {
			t.Errorf("GET %s: %d, want %d: %.300s", c.path, status, c.status, body)
			continue
		}
		if got := h.Get("Content-Type"); got != c.typ {
			t.Errorf("GET %s: Content-Type %q, want %q", c.path, got, c.typ)
		}
		for _, w := range c.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: the body lacks %q", c.path, w)
			}
		}
		for _, hdr := range []string{"Content-Security-Policy", "X-Content-Type-Options", "X-Frame-Options", "Referrer-Policy"} {
			if h.Get(hdr) == "" {
				t.Errorf("GET %s: no %s header", c.path, hdr)
			}
		}
	}
	// Names that reduce to a domain are sent to its address.
	for path, want := range map[string]string{
		"/d/" + strings.ToUpper(top): "/d/" + top,
		"/d/www." + top:              "/d/" + top,
		"/api/d/WWW." + top:          "/api/d/" + top,
		"/remove?domain=www." + top:  "/remove/" + top,
	} {
		status, h, _ := ts.get(path)
		if (status != http.StatusMovedPermanently && status != http.StatusSeeOther) || h.Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want a redirect to %q", path, status, h.Get("Location"), want)
		}
	}
	// Only GET and HEAD (and the removal check's POST).
	if status, _, _ := ts.do("POST", "/d/"+top, nil); status != http.StatusNotFound {
		t.Errorf("POST /d/: %d", status)
	}
	if status, h, body := ts.do("HEAD", "/api/map/points.bin", map[string]string{"Accept-Encoding": "gzip"}); status != 200 || body != "" || h.Get("Content-Length") == "" {
		t.Errorf("HEAD points.bin: %d %q %v", status, body, h)
	}
}

func TestKeyDirectory(t *testing.T) {
	ts := newTestSite(t, smallWorld, nil)
	// No key in the data directory: the directory is unavailable, and
	// says so rather than serving an empty set.
	status, _, _ := ts.get("/.well-known/http-message-signatures-directory")
	if status == http.StatusOK || status == http.StatusNotFound {
		t.Errorf("key directory without keys: %d", status)
	}
}

func TestPathTraversal(t *testing.T) {
	ts := newTestSite(t, smallWorld, nil)
	for _, p := range []string{
		"/static/../../../../etc/passwd", "/static/..%2f..%2f..%2fetc%2fpasswd", "/static/%2e%2e/%2e%2e/etc/passwd",
		"/d/..%2f..%2fetc%2fpasswd", "/api/d/..%2F..%2Fmanifest.json", "/static//etc/passwd", "/..%5c..%5cetc/passwd",
		"/remove/..%2f..%2fkeys",
	} {
		req, err := http.NewRequest("GET", ts.http.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = p // sent as written, not cleaned by the client
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == 200 || resp.StatusCode >= 500 || strings.Contains(string(body), "root:") {
			t.Errorf("GET %s: %d %.100q", p, resp.StatusCode, body)
		}
	}
}

// TestHugeQuery sends a 10 MB query string to the real server (its limits
// are the http.Server's): refused with 431, and the server stays up.
func TestHugeQuery(t *testing.T) {
	ts := newTestSite(t, smallWorld, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, ts.s, ts.s.log) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + ln.Addr().String()
	resp, err := http.Get(base + "/api/search?q=" + strings.Repeat("a", 10<<20))
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("10 MB query: %d, want 431", resp.StatusCode)
		}
	} // else: the server closed the connection mid-request, also a refusal
	resp, err = http.Get(base + "/api/search?q=" + strings.Repeat("a", 20_000))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("20 kB query: %d, want 400", resp.StatusCode)
	}
	resp, err = http.Get(base + "/api/snapshot")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("after the big queries: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestDomainReport(t *testing.T) {
	ts := newTestSite(t, smallWorld, nil)
	w := ts.w
	// A domain with visits, links both ways and a schedule row.
	var id uint32
	for _, v := range w.visited {
		if w.rank[v] > 0 && len(w.outs[v]) > 3 && v%2 == 1 {
			id = v
			break
		}
	}
	name := w.names[id]
	var d domainJSON
	if status := ts.getJSON("/api/d/"+name, &d); status != 200 {
		t.Fatalf("status %d", status)
	}
	if d.Domain != name || d.Rank == nil || *d.Rank != w.rank[id] || d.Snapshot != w.id {
		t.Errorf("report %+v", d)
	}
	if d.OutLinks.Total != len(w.outs[id]) {
		t.Errorf("%d out-links, want %d", d.OutLinks.Total, len(w.outs[id]))
	}
	nofollow := 0
	for _, dst := range w.outs[id] {
		if w.nofol[[2]uint32{id, dst}] {
			nofollow++
		}
	}
	if d.OutLinks.Nofollow != nofollow {
		t.Errorf("%d nofollow out-links, want %d", d.OutLinks.Nofollow, nofollow)
	}
	// Visits: newest first, the failed one with its error.
	if want := 1 + int(id)%3; len(d.Visits) != want {
		t.Fatalf("%d visits, want %d", len(d.Visits), want)
	}
	for k := 1; k < len(d.Visits); k++ {
		if d.Visits[k].StartedAt.After(d.Visits[k-1].StartedAt) {
			t.Errorf("visits not newest first")
		}
	}
	last := d.Visits[len(d.Visits)-1]
	if last.Outcome != "connect_error" || last.Error == nil {
		t.Errorf("oldest visit %+v", last)
	}
	if d.NextVisit == nil || d.NextVisit.Reason != "revisit" || !strings.Contains(d.NextVisit.Why, "every") {
		t.Errorf("next visit %+v", d.NextVisit)
	}
	if d.Community == nil || len(d.Community.Top) == 0 || d.Point == nil {
		t.Errorf("community %+v, point %v", d.Community, d.Point)
	}
	if d.HTTPS == nil || d.NetworkOperator == nil || d.ASN == nil {
		t.Errorf("https %v, operator %v, asn %v", d.HTTPS, d.NetworkOperator, d.ASN)
	}
	// Pages of in-links, best-ranked first, and past the end.
	var in struct {
		linksJSON
		Dir string `json:"dir"`
	}
	top := w.names[w.ranked[0]]
	ts.getJSON("/api/d/"+top+"/links?dir=in&offset=0&limit=5", &in)
	if len(in.Items) != 5 || in.Total < 5 {
		t.Fatalf("in-links %+v", in)
	}
	for k := 1; k < len(in.Items); k++ {
		a, b := in.Items[k-1].Rank, in.Items[k].Rank
		if a == nil || (b != nil && *b < *a) {
			t.Errorf("in-links not best-ranked first: %v then %v", a, b)
		}
	}
	ts.getJSON(fmt.Sprintf("/api/d/%s/links?dir=in&offset=%d", top, in.Total+10), &in)
	if len(in.Items) != 0 {
		t.Errorf("past the end: %d items", len(in.Items))
	}
	// The HTML page escapes what it shows and pages the links.
	status, _, body := ts.get("/d/" + top + "?in=2")
	if status != 200 || !strings.Contains(body, "page 2 of") {
		t.Errorf("second page of in-links: %d", status)
	}
	if status, _, _ := ts.get("/d/" + top + "?in=x"); status != 400 {
		t.Errorf("in=x: %d", status)
	}
}

func TestSearch(t *testing.T) {
	ts := newTestSite(t, smallWorld, nil)
	name := ts.w.names[ts.w.ranked[5]]
	var res struct {
		Hits []searchHit `json:"hits"`
	}
	for _, q := range []string{name, strings.ToUpper(name), "https://www." + name + "/page?x=1", " " + name + " "} {
		ts.getJSON("/api/search?q="+urlQuery(q), &res)
		if len(res.Hits) == 0 || res.Hits[0].Domain != name {
			t.Errorf("search %q: %+v", q, res.Hits)
		}
	}
	// A prefix gives the best-ranked names that start with it.
	ts.getJSON("/api/search?q=d", &res)
	for k := 1; k < len(res.Hits); k++ {
		if !strings.HasPrefix(res.Hits[k].Domain, "d") {
			t.Errorf("hit %q does not start with d", res.Hits[k].Domain)
		}
		a, b := res.Hits[k-1].Rank, res.Hits[k].Rank
		if a != nil && b != nil && *b < *a {
			t.Errorf("hits not best-ranked first")
		}
	}
	ts.getJSON("/api/search?q=zzzz-nothing", &res)
	if len(res.Hits) != 0 {
		t.Errorf("nonsense found %v", res.Hits)
	}
}

func urlQuery(s string) string {
	return strings.NewReplacer(" ", "%20", "?", "%3F", "&", "%26", "=", "%3D", "/", "%2F", ":", "%3A").Replace(s)
}

func TestRemovalPage(t *testing.T) {
	var removed []string
	var mu sync.Mutex
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	ts := newTestSite(t, smallWorld, func(o *Options) {
		o.Clock = func() time.Time { return now }
		o.Remove = func(_ context.Context, res *removal.Result) error {
			mu.Lock()
			defer mu.Unlock()
			removed = append(removed, res.Domain)
			return nil
		}
	})
	name := ts.w.names[ts.w.ranked[3]]
	tok := removal.Token([]byte("0123456789abcdef0123456789abcdef"), name)
	_, _, body := ts.get("/remove/" + name)
	for _, want := range []string{tok, removal.TXTPrefix + tok, `content="` + tok + `"`} {
		if !strings.Contains(body, want) && !strings.Contains(body, strings.ReplaceAll(want, `"`, "&#34;")) {
			t.Errorf("removal page lacks %q", want)
		}
	}
	// No proof: nothing removed.
	status, _, body := ts.do("POST", "/remove/"+name+"/check", nil)
	if status != 200 || !strings.Contains(body, "No proof found") || len(removed) != 0 {
		t.Errorf("unproven check: %d, removed %v", status, removed)
	}
	// Again within the minute: refused without checking.
	calls := ts.check.calls
	status, _, _ = ts.do("POST", "/remove/"+name+"/check", nil)
	if status != http.StatusTooManyRequests || ts.check.calls != calls {
		t.Errorf("second check within a minute: %d, %d checks", status, ts.check.calls-calls)
	}
	// A minute on, with the proof published: removed.
	now = now.Add(time.Minute)
	ts.check.proven[name] = true
	status, _, body = ts.do("POST", "/remove/"+name+"/check", nil)
	if status != 200 || !strings.Contains(body, "has been removed") || len(removed) != 1 || removed[0] != name {
		t.Errorf("proven check: %d, removed %v: %.300s", status, removed, body)
	}
	if status, _, _ := ts.do("POST", "/remove/not..a.domain/check", nil); status != 404 {
		t.Errorf("check of a non-domain: %d", status)
	}
}

// TestSnapshotReplaced moves current to a new snapshot while requests run:
// every answer is whole and from one snapshot or the other, and once
// Refresh returns, only the new one answers. The old snapshot's directory
// is then deleted (as --keep prunes it): requests still in flight on it
// read their open file.
func TestSnapshotReplaced(t *testing.T) {
	ts := newTestSite(t, smallWorld, nil)
	old := ts.w
	next := smallWorld
	next.asOf = fixtureAsOf.Add(24 * time.Hour)
	next.prev = old.id
	next.cfg.Seed = 4
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; ctx.Err() == nil; k++ {
				name := old.names[(g*997+k*31)%len(old.names)]
				resp, err := http.Get(ts.http.URL + "/api/d/" + name)
				if err != nil {
					errs <- err
					return
				}
				var d domainJSON
				err = json.NewDecoder(resp.Body).Decode(&d)
				resp.Body.Close()
				if resp.StatusCode >= 500 || (resp.StatusCode == 200 && err != nil) {
					errs <- fmt.Errorf("%s: %d %v", name, resp.StatusCode, err)
					return
				}
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let requests run on the old snapshot
	nw := writeFixture(t, ts.dir, next)
	changed, err := ts.s.Refresh()
	if err != nil || !changed {
		t.Fatalf("refresh: %v %v", changed, err)
	}
	time.Sleep(50 * time.Millisecond)
	cancel()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var snap struct {
		Snapshot string `json:"snapshot"`
		Previous string `json:"previous"`
	}
	ts.getJSON("/api/snapshot", &snap)
	if snap.Snapshot != nw.id || snap.Previous != old.id {
		t.Errorf("serving %+v after the refresh, want %s", snap, nw.id)
	}
	if changed, err := ts.s.Refresh(); changed || err != nil {
		t.Errorf("a second refresh: %v %v", changed, err)
	}
}

// TestDamagedSnapshot: a snapshot whose files are cut short or lack a
// column the server reads, or have it of another type, fails to load with
// an error naming the file, and the old snapshot goes on serving.
func TestDamagedSnapshot(t *testing.T) {
	ts := newTestSite(t, smallWorld, nil)
	old := ts.w.id
	for k, c := range []struct {
		file   string
		damage func(t *testing.T, path string)
	}{
		{data.EdgesFile, func(t *testing.T, path string) {
			st, err := os.Stat(path)
			if err == nil {
				err = os.Truncate(path, st.Size()/2)
			}
			if err != nil {
				t.Fatal(err)
			}
		}},
		{data.VisitsFile, func(t *testing.T, path string) {
			type noOutcome struct {
				Domain    string    `parquet:"domain"`
				StartedAt time.Time `parquet:"started_at,timestamp(microsecond)"`
			}
			writeParquetFile(t, path, []noOutcome{{"a.example", fixtureAsOf}})
		}},
		{data.ScheduleFile, func(t *testing.T, path string) {
			type pagesAsText struct {
				Domain    string    `parquet:"domain"`
				NextVisit time.Time `parquet:"next_visit,timestamp(microsecond)"`
				Pages     string    `parquet:"pages"`
				Reason    string    `parquet:"reason"`
				Priority  int64     `parquet:"priority"`
			}
			writeParquetFile(t, path, []pagesAsText{{"a.example", fixtureAsOf, "3", "new", 1}})
		}},
	} {
		next := smallWorld
		next.asOf = fixtureAsOf.Add(time.Duration(k+1) * 24 * time.Hour)
		w := writeFixture(t, ts.dir, next)
		path := snapshot.Local(ts.dir).Location(w.id, c.file)
		c.damage(t, path)
		changed, err := ts.s.Refresh()
		if changed || err == nil || !strings.Contains(err.Error(), c.file) {
			t.Errorf("%s damaged: refresh %v, %v", c.file, changed, err)
		}
		if got := ts.s.Snapshot(); got != old {
			t.Errorf("%s damaged: serving %s, want %s", c.file, got, old)
		}
	}
	if status, _, _ := ts.get("/api/d/" + ts.w.names[ts.w.ranked[0]]); status != 200 {
		t.Errorf("the old snapshot answers %d", status)
	}
}
