package simweb

import (
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/robots"
)

// The oracle reads every robots.txt of the web as the crawler's own parser
// reads its text: the same verdict for every page of the host and the same
// Crawl-delay. robots-rules.example and crawl-delay.example put records
// between the user-agent lines of one group (RFC 9309 section 2.2.4), so a
// parser or an oracle that lets them end the group disagrees here.
func TestRobotsOracleAgreesWithParser(t *testing.T) {
	w := newWeb(t, Config{Seed: 1, Sites: 40, SpecialShare: 0.5})
	checked := 0
	for _, h := range w.world.byHost {
		if !h.robots.available() || h.robots.status >= 400 {
			continue
		}
		text := h.robots.text()
		g := robots.Parse(text).Group(Token)
		paths := []string{"/", "/robots.txt", "/admin/login", "/admin/help", "/late/page", "/x"}
		for p := range h.pages {
			paths = append(paths, p)
		}
		for _, p := range paths {
			if got, want := g.Allowed(p), h.robots.allowed(Token, p); got != want {
				t.Errorf("%s %s: parser says allowed=%v, oracle %v\n%s", h.name, p, got, want, text)
			}
			checked++
		}
		d, ok := g.CrawlDelay()
		if want := time.Duration(h.robots.crawlDelay(Token)) * time.Second; d != want || ok != (want > 0) {
			t.Errorf("%s: parser's crawl-delay %v (%v), oracle's %v", h.name, d, ok, want)
		}
	}
	if checked == 0 {
		t.Fatal("nothing checked")
	}
}

// The two named cases render records inside one group, and the oracle
// reads them as one group.
func TestRobotsSharedGroups(t *testing.T) {
	w := newWeb(t, Config{Seed: 1, Sites: 1})
	rules := w.world.byHost["robots-rules.example"]
	text := string(rules.robots.text())
	if !strings.Contains(text, "User-agent: MapTheNetBot\nSitemap: https://robots-rules.example/sitemap.xml\n") {
		t.Errorf("robots-rules.example: no Sitemap inside our group:\n%s", text)
	}
	for _, p := range []string{"/private/secret", "/index.php", "/admin/x"} {
		if rules.robots.allowed(Token, p) || rules.robots.allowed("OtherBot", p) {
			t.Errorf("robots-rules.example %s: allowed, the shared group disallows it", p)
		}
	}
	delay := w.world.byHost["crawl-delay.example"]
	text = string(delay.robots.text())
	if !strings.Contains(text, "User-agent: *\nCrawl-delay: 2\nUser-agent: MapTheNetBot\n") {
		t.Errorf("crawl-delay.example: the delay is not between the agents:\n%s", text)
	}
	if s := w.world.byName["crawl-delay.example"]; s.CrawlDelay != 2 {
		t.Errorf("crawl-delay.example: CrawlDelay %d, want 2", s.CrawlDelay)
	}
	if delay.robots.allowed(Token, "/admin/login") {
		t.Error("crawl-delay.example: /admin/login allowed")
	}
}
