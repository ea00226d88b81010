package e2e

import (
	"slices"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/simweb"
)

// A site whose only links to other domains are inside its feeds' posts
// (RSS description and content:encoded, Atom html content under an
// xml:base and xhtml summary, JSON Feed content_html): a real crawl and
// rebuild record every one of those edges, with the posts' rel flags, and
// the domains they name are then visited.
func TestFeedPostLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a simulated web for real")
	}
	var skip []simweb.Kind
	for _, k := range simweb.Kinds() {
		if k != simweb.KindFeedPosts && k != simweb.KindNormal {
			skip = append(skip, k)
		}
	}
	r := crawlAndRebuild(t, simweb.Config{Seed: 3, Sites: 8, Skip: skip}, nil)
	w := r.web
	for _, v := range w.CheckAll(r.reqs, simweb.Rules{MinDelay: minDelay, Slack: slack}) {
		t.Errorf("violation: %s", v)
	}
	const src = "feed-posts.example"
	var want []string
	for _, e := range edgeSet(w.ExpectedEdges()) {
		if strings.HasPrefix(e, src+" > ") {
			want = append(want, e)
		}
	}
	if len(want) != 6 {
		t.Fatalf("the web gives %s %d edges, want 6: %v", src, len(want), want)
	}
	var got []string
	for _, e := range snapshotEdges(t, r) {
		if strings.HasPrefix(e, src+" > ") {
			got = append(got, e)
		}
	}
	for _, d := range diff(got, want) {
		t.Errorf("edge %s", d)
	}
	// And the whole snapshot is what the web expects.
	for _, d := range diff(snapshotEdges(t, r), edgeSet(w.ExpectedEdges())) {
		t.Errorf("edge %s", d)
	}
	visits := readSnapshot[data.VisitRow](t, r, "visits.parquet")
	for _, s := range w.Sites() {
		if !slices.ContainsFunc(visits, func(v data.VisitRow) bool { return v.Domain == s.Domain }) {
			t.Errorf("%s: never visited", s.Domain)
		}
		if s.Domain == src {
			if got, want := simweb.Pages(r.reqs)[src], w.ExpectedPages(src); got != want {
				t.Errorf("%s: %d pages requested, want %d", src, got, want)
			}
		}
	}
}
