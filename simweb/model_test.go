package simweb

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/net/publicsuffix"
)

var update = flag.Bool("update", false, "rewrite golden files")

func newWeb(t testing.TB, cfg Config) *Web {
	t.Helper()
	w, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

// Every finite site fits in a first visit's 8 pages, and no page a correct
// crawler reads links never-read.example: the fixtures keep ExpectedEdges'
// assumptions.
func TestModelFitsFirstVisit(t *testing.T) {
	for _, cfg := range []Config{
		{Seed: 1},
		{Seed: 2, Sites: 300, SpecialShare: 0.5},
		{Seed: 3, Sites: 100, SpecialShare: 1, SpecialKinds: Kinds()},
		{Seed: 4, Sites: 30, Pages: 6},
		{Seed: 5, Sites: 1, NoNamed: true},
		{Seed: 6, Sites: -1},
	} {
		w := newWeb(t, cfg)
		for _, s := range w.world.sites {
			v := w.world.simulate(s, FirstVisitPages)
			if v.cut && s.Kind != KindCalendar {
				t.Errorf("seed %d: %s (%s) needs more than %d pages: %v", cfg.Seed, s.Domain, s.Kind, FirstVisitPages, v.urls)
			}
			if s.Kind == KindCalendar && !v.cut {
				t.Errorf("seed %d: calendar %s ended", cfg.Seed, s.Domain)
			}
			for _, e := range v.edges {
				if e.Dst == neverRead {
					t.Errorf("seed %d: %s (%s) links %s from a page a crawler reads", cfg.Seed, s.Domain, s.Kind, neverRead)
				}
				if e.Dst == e.Src {
					t.Errorf("self edge %v", e)
				}
			}
			if kinds[s.Kind].readable != (len(v.edges) > 0) && s.Kind != KindNormal && len(s.targets) > 0 {
				t.Errorf("seed %d: %s (%s): %d edges", cfg.Seed, s.Domain, s.Kind, len(v.edges))
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	cfg := Config{Seed: 42, Sites: 200, SpecialShare: 0.2}
	a, b := newWeb(t, cfg), newWeb(t, cfg)
	if !reflect.DeepEqual(a.Sites(), b.Sites()) {
		t.Error("same seed, different sites")
	}
	if !reflect.DeepEqual(a.ExpectedEdges(), b.ExpectedEdges()) {
		t.Error("same seed, different edges")
	}
	cfg.Seed = 43
	if c := newWeb(t, cfg); reflect.DeepEqual(a.ExpectedEdges(), c.ExpectedEdges()) {
		t.Error("another seed, same edges")
	}
}

// The named sites' expectations, as a reviewer reads them.
func TestExpectedGolden(t *testing.T) {
	w := newWeb(t, Config{Seed: 1, Sites: 10})
	var b strings.Builder
	for _, s := range w.Sites() {
		fmt.Fprintf(&b, "site %s kind=%s home=%s outcome=%s status=%d robots=%d https=%v pages=%d\n",
			s.Domain, s.Kind, s.Home, s.Outcome, s.HTTPStatus, s.RobotsStatus, s.HTTPS, w.ExpectedPages(s.Domain))
	}
	for _, e := range w.ExpectedEdges() {
		fmt.Fprintf(&b, "edge %s -> %s nofollow=%v sitewide=%v feed=%v words=%s\n",
			e.Src, e.Dst, e.Nofollow, e.Sitewide, e.FromFeed, strings.Join(e.Words, ","))
	}
	for _, s := range w.Sites() {
		for _, wc := range w.ExpectedLinkWords()[s.Domain] {
			fmt.Fprintf(&b, "words %s %s %d\n", s.Domain, wc.Word, wc.Sites)
		}
	}
	golden(t, "expected.golden", b.String())
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (rerun with -update and review the diff)\n%s", name, firstDiff(got, string(want)))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) && i < len(bl); i++ {
		if al[i] != bl[i] {
			return fmt.Sprintf("line %d:\n got  %s\n want %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d lines", len(al), len(bl))
}

// The fixed cases behave as their kinds promise.
func TestNamedCases(t *testing.T) {
	w := newWeb(t, Config{Seed: 1, Sites: 10})
	edges := map[string][]Edge{}
	for _, e := range w.ExpectedEdges() {
		edges[e.Src] = append(edges[e.Src], e)
	}
	find := func(src string, pred func(Edge) bool) bool {
		for _, e := range edges[src] {
			if pred(e) {
				return true
			}
		}
		return false
	}
	if got := edges["moved.example"]; len(got) != 1 || got[0].Dst != "moved-here.example" || got[0].Nofollow {
		t.Errorf("moved.example edges %v", got)
	}
	if !find("rel.example", func(e Edge) bool { return e.Nofollow && e.Sitewide }) {
		t.Error("rel.example: no sitewide nofollow edge")
	}
	if !find("rel.example", func(e Edge) bool { return !e.Nofollow && e.Sitewide }) {
		t.Error("rel.example: no sitewide followed edge")
	}
	for _, s := range []string{"robots-5xx.example", "robots-hang.example", "robots-redirect-6.example", "opted-out.example",
		"throttle-429.example", "throttle-503.example", "challenge-cf.example", "challenge-generic.example",
		"home-500.example", "gone-404.example", "gone-410.example", "redirect-loop.example"} {
		if len(edges[s]) > 0 {
			t.Errorf("%s: edges %v", s, edges[s])
		}
	}
	for _, e := range edges["throttle-429-date.example"] {
		if e.Sitewide {
			t.Errorf("partial visit gave a sitewide edge %v", e)
		}
	}
	if n := w.ExpectedPages("calendar.example"); n != FirstVisitPages {
		t.Errorf("calendar pages %d", n)
	}
}

// Every host's registrable domain by the real Public Suffix List (private
// section included) is its site's Domain, and link targets too.
func TestRegistrableDomains(t *testing.T) {
	w := newWeb(t, Config{Seed: 1, Sites: 5})
	for _, s := range w.world.sites {
		for _, h := range s.Hosts {
			got, err := publicsuffix.EffectiveTLDPlusOne(h)
			if err != nil || got != s.Domain {
				t.Errorf("host %s: registrable domain %q (%v), site %s", h, got, err, s.Domain)
			}
		}
	}
	for _, e := range w.ExpectedEdges() {
		if got, _ := publicsuffix.EffectiveTLDPlusOne(e.Dst); got != e.Dst {
			t.Errorf("edge target %s is not a registrable domain (%s)", e.Dst, got)
		}
	}
}
