package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/simweb"
	"github.com/mapthenet/mapthenet/snapshot"
)

// The as-of time of the crawls and rebuilds (the crawler's --now).
var now = time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)

const (
	minDelay    = 20 * time.Millisecond
	platformGap = 50 * time.Millisecond
	// slack absorbs the distance between the crawler's clock and the
	// server's: both read the same machine clock, microseconds apart.
	slack = 3 * time.Millisecond
)

// run is one crawl of a simulated web and a rebuild of what it stored.
type run struct {
	web   *simweb.Web
	dir   string
	stats crawl.Stats
	reqs  []simweb.Request
}

// crawlAndRebuild serves cfg's web, crawls every site once (all seeded,
// until idle) and rebuilds a snapshot.
func crawlAndRebuild(t *testing.T, cfg simweb.Config, tune func(*crawl.Options)) *run {
	t.Helper()
	r := serve(t, cfg)
	r.crawl(t, now, tune)
	return r
}

// serve starts cfg's web and makes a data directory with a seed file of
// every site.
func serve(t testing.TB, cfg simweb.Config) *run {
	t.Helper()
	w, err := simweb.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if err := w.WarmCertificates(); err != nil {
		t.Fatal(err)
	}
	r := &run{web: w, dir: t.TempDir()}
	if err := w.WriteSeeds(filepath.Join(r.dir, "seeds.txt")); err != nil {
		t.Fatal(err)
	}
	return r
}

// crawl runs one crawl as of at (until idle) and a rebuild an hour later;
// the request log then holds this crawl's requests only.
func (r *run) crawl(t *testing.T, at time.Time, tune func(*crawl.Options)) {
	t.Helper()
	w := r.web
	w.Reset()
	ct, err := fetch.ParseConnectTo(w.ConnectTo())
	if err != nil {
		t.Fatal(err)
	}
	store, err := graph.Open(filepath.Join(r.dir, "store"), graph.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	opts := crawl.Options{
		ConnectTo: []fetch.ConnectTo{ct}, CACertFile: w.CAFile(), KeysDir: filepath.Join(r.dir, "keys"),
		DataDir: r.dir, Seeds: []string{filepath.Join(r.dir, "seeds.txt")}, UntilIdle: true, Now: at,
		MinDelay: minDelay, MinDelaySet: true,
		Platforms: []crawl.Platform{{Suffix: "github.io", Gap: platformGap}},
		// robots-hang.example: the crawler's timeout is what ends it (long
		// enough for every other answer under the race detector on a
		// busy machine: at 5 s, big-page.example's 1024 KB read timed out
		// on a loaded 2-core machine).
		ResponseTimeout: 10 * time.Second,
	}
	if tune != nil {
		tune(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	stats, err := crawl.Run(ctx, store, opts)
	if err != nil {
		store.Close()
		t.Fatalf("crawl: %v", err)
	}
	if _, err := rebuild.Run(ctx, shard.One(store), rebuild.Options{DataDir: r.dir, Now: at.Add(time.Hour)}); err != nil {
		store.Close()
		t.Fatalf("rebuild: %v", err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	r.stats, r.reqs = stats, w.Requests()
}

func readSnapshot[T any](t *testing.T, r *run, file string) []T {
	t.Helper()
	rows, err := parquet.ReadFile[T](snapshot.Local(r.dir).CurrentPath(file))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return rows
}

// edgeSet renders edges as "src > dst nofollow=.. sitewide=..".
func edgeSet(edges []simweb.Edge) []string {
	var out []string
	for _, e := range edges {
		out = append(out, fmt.Sprintf("%s > %s nofollow=%v sitewide=%v", e.Src, e.Dst, e.Nofollow, e.Sitewide))
	}
	slices.Sort(out)
	return out
}

func snapshotEdges(t *testing.T, r *run) []string {
	var out []string
	for _, e := range readSnapshot[data.EdgeRow](t, r, "edges.parquet") {
		out = append(out, fmt.Sprintf("%s > %s nofollow=%v sitewide=%v", e.Src, e.Dst, e.Nofollow, e.Sitewide))
	}
	slices.Sort(out)
	return out
}

// diff lists what only one side has.
func diff(got, want []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, "missing  "+w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			out = append(out, "extra    "+g)
		}
	}
	return out
}

// Every named case plus generated sites: the request log keeps every
// promise, and the snapshot holds exactly the expected edges, outcomes,
// statuses and page counts.
func TestCrawlEveryCase(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a simulated web for real (about 20 s: crawl-delay.example's 2 s gaps)")
	}
	r := crawlAndRebuild(t, simweb.Config{Seed: 11, Sites: 40, SpecialShare: 0.25, SlowDelay: 30 * time.Millisecond}, nil)
	w := r.web
	t.Logf("crawl: %+v, %d requests", r.stats, len(r.reqs))

	// What the sites saw.
	for _, v := range w.CheckAll(r.reqs, simweb.Rules{
		MinDelay: minDelay, Slack: slack, UserAgent: crawl.DefaultUserAgent,
		Platforms: map[string]time.Duration{"github.io": platformGap},
	}) {
		t.Errorf("violation: %s", v)
	}
	// Every site was asked for its pages, no more, no fewer.
	pages := simweb.Pages(r.reqs)
	for _, s := range w.Sites() {
		if got, want := pages[s.Domain], w.ExpectedPages(s.Domain); got != want {
			t.Errorf("%s (%s): %d pages requested, want %d", s.Domain, s.Kind, got, want)
		}
	}

	// What the snapshot holds.
	for _, d := range diff(snapshotEdges(t, r), edgeSet(w.ExpectedEdges())) {
		t.Errorf("edge %s", d)
	}
	for _, d := range diff(snapshotWords(t, r), expectedWords(w)) {
		t.Errorf("link word %s", d)
	}
	domains := map[string]data.DomainRow{}
	for _, d := range readSnapshot[data.DomainRow](t, r, "domains.parquet") {
		domains[d.Domain] = d
	}
	visits := map[string][]data.VisitRow{}
	for _, v := range readSnapshot[data.VisitRow](t, r, "visits.parquet") {
		visits[v.Domain] = append(visits[v.Domain], v)
	}
	for _, s := range w.Sites() {
		d, ok := domains[s.Domain]
		if !ok {
			t.Errorf("%s: not in domains.parquet", s.Domain)
			continue
		}
		if d.LastOutcome == nil || *d.LastOutcome != string(s.Outcome) {
			t.Errorf("%s (%s): last_outcome %v, want %s", s.Domain, s.Kind, deref(d.LastOutcome), s.Outcome)
		}
		if d.OptedOut != (s.Outcome == data.OutcomeOptedOut) {
			t.Errorf("%s (%s): opted_out %v", s.Domain, s.Kind, d.OptedOut)
		}
		vs := visits[s.Domain]
		if len(vs) != 1 {
			t.Errorf("%s (%s): %d visits, want 1", s.Domain, s.Kind, len(vs))
			continue
		}
		v := vs[0]
		if v.Outcome != string(s.Outcome) || int(v.HTTPStatus) != s.HTTPStatus || int(v.Pages) != w.ExpectedPages(s.Domain) {
			t.Errorf("%s (%s): visit outcome=%s http_status=%d pages=%d, want %s %d %d",
				s.Domain, s.Kind, v.Outcome, v.HTTPStatus, v.Pages, s.Outcome, s.HTTPStatus, w.ExpectedPages(s.Domain))
		}
		if got := v.RobotsStatus; (got == nil) != (s.RobotsStatus == 0) || got != nil && int(*got) != s.RobotsStatus {
			t.Errorf("%s (%s): robots_status %v, want %d", s.Domain, s.Kind, derefI(got), s.RobotsStatus)
		}
		if v.Error != nil && (strings.Contains(*v.Error, "127.0.0.1") || strings.Contains(*v.Error, "://")) {
			t.Errorf("%s: visit error names an address: %q", s.Domain, *v.Error)
		}
		if s.Outcome == data.OutcomeOK && (d.HTTPS == nil || *d.HTTPS != s.HTTPS) {
			t.Errorf("%s (%s): https %v, want %v", s.Domain, s.Kind, derefB(d.HTTPS), s.HTTPS)
		}
	}
}

// The edges do not depend on how many sites are crawled at once
// (a metamorphic test: one web, two concurrencies, one answer).
func TestCrawlConcurrencyInvariant(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a simulated web twice")
	}
	cfg := simweb.Config{Seed: 5, Sites: 60, SpecialShare: 0.2,
		Skip: []simweb.Kind{simweb.KindRobotsHang, simweb.KindSlow, simweb.KindCrawlDelay}}
	one := crawlAndRebuild(t, cfg, func(o *crawl.Options) { o.SitesInFlight = 1; o.MinDelay = 0 })
	many := crawlAndRebuild(t, cfg, func(o *crawl.Options) { o.SitesInFlight = 64 })
	a, b := snapshotEdges(t, one), snapshotEdges(t, many)
	for _, d := range diff(b, a) {
		t.Errorf("64 sites at once vs one: %s", d)
	}
	for _, d := range diff(a, edgeSet(one.web.ExpectedEdges())) {
		t.Errorf("edge %s", d)
	}
}

// link_words.parquet rows as "domain word sites".
func snapshotWords(t *testing.T, r *run) []string {
	var out []string
	for _, w := range readSnapshot[data.LinkWordRow](t, r, "link_words.parquet") {
		out = append(out, fmt.Sprintf("%s %s %d", w.Domain, w.Word, w.Sites))
	}
	slices.Sort(out)
	return out
}

func expectedWords(w *simweb.Web) []string {
	var out []string
	for d, ws := range w.ExpectedLinkWords() {
		for _, x := range ws {
			out = append(out, fmt.Sprintf("%s %s %d", d, x.Word, x.Sites))
		}
	}
	slices.Sort(out)
	return out
}

// A year later every domain is due again: each visit reads robots.txt
// afresh before anything else, pages follow the tier's budget, and the
// edges of complete visits replace the old ones (here: the same edges, the
// web being the same).
func TestRevisit(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a simulated web twice")
	}
	r := serve(t, simweb.Config{Seed: 3, Sites: 30, SpecialShare: 0.2,
		Skip: []simweb.Kind{simweb.KindRobotsHang, simweb.KindSlow, simweb.KindCrawlDelay}})
	r.crawl(t, now, nil)
	first := snapshotEdges(t, r)
	r.crawl(t, now.AddDate(1, 1, 0), nil)
	t.Logf("second crawl: %+v, %d requests", r.stats, len(r.reqs))
	if r.stats.Visits != len(r.web.Sites()) {
		t.Errorf("%d revisits, want every one of %d sites", r.stats.Visits, len(r.web.Sites()))
	}
	// Ranked domains revisit with up to 50 pages.
	for _, v := range r.web.CheckAll(r.reqs, simweb.Rules{MinDelay: minDelay, Slack: slack, MaxPages: 50,
		UserAgent: crawl.DefaultUserAgent, Platforms: map[string]time.Duration{"github.io": platformGap}}) {
		t.Errorf("violation: %s", v)
	}
	for _, d := range diff(snapshotEdges(t, r), first) {
		t.Errorf("edge after the revisit: %s", d)
	}
	visits := map[string]int{}
	for _, v := range readSnapshot[data.VisitRow](t, r, "visits.parquet") {
		visits[v.Domain]++
	}
	for _, s := range r.web.Sites() {
		if visits[s.Domain] != 2 {
			t.Errorf("%s: %d visits, want 2", s.Domain, visits[s.Domain])
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}

func derefI(p *int32) string {
	if p == nil {
		return "<null>"
	}
	return fmt.Sprint(*p)
}

func derefB(p *bool) string {
	if p == nil {
		return "<null>"
	}
	return fmt.Sprint(*p)
}
