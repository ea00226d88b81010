package site

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/internal/browsertest"
)

// Chromium for these tests: package internal/browsertest.
var browser = browsertest.Start

func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(25*time.Millisecond), chromedp.WithPollingTimeout(90*time.Second))
}

// openMap loads the map page and waits until it is drawn, its names are
// in and any permalink is applied.
func openMap(tb testing.TB, ctx context.Context, url string) time.Duration {
	tb.Helper()
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(url), poll("window.mapthenet && (window.mapthenet.ready || window.mapthenet.error)")); err != nil {
		tb.Fatalf("loading %s: %v", url, err)
	}
	took := time.Since(start)
	errText, err := chromedp.Run(ctx, chromedp.Evaluate[string]("window.mapthenet.error || ''"))
	if err != nil || errText != "" {
		tb.Fatalf("the map failed: %q %v", errText, err)
	}
	if err := chromedp.Do(ctx, poll("window.mapthenet.namesReady && window.mapthenet.settled && !window.mapthenet.busy && !window.mapthenet.flying")); err != nil {
		tb.Fatalf("settling %s: %v", url, err)
	}
	return took
}

func eval[T any](tb testing.TB, ctx context.Context, expr string) T {
	tb.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		tb.Fatalf("%s: %v", expr, err)
	}
	return v
}

func screenshot(tb testing.TB, ctx context.Context) image.Image {
	tb.Helper()
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		tb.Fatalf("screenshot: %v", err)
	}
	// MAPTHENET_SCREENSHOT_DIR keeps the screenshots for a person to see.
	if keep := os.Getenv("MAPTHENET_SCREENSHOT_DIR"); keep != "" {
		path := filepath.Join(keep, strings.ReplaceAll(tb.Name(), "/", "_")+fmt.Sprintf("-%d.png", time.Now().UnixMilli()))
		if err := os.WriteFile(path, shot, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		tb.Fatalf("the screenshot is not a PNG: %v", err)
	}
	return img
}

// pixelStats: the share of pixels unlike the background (the colour at the
// middle of the right edge), the number of distinct colours (to 4 bits a
// channel) that cover at least 50 pixels each, and the pixels near a
// colour.
type pixelStats struct {
	ink     float64
	colours int
}

func statsOf(img image.Image) pixelStats {
	b := img.Bounds()
	r0, g0, b0, _ := img.At(b.Max.X-1, b.Max.Y/2).RGBA()
	counts := map[uint32]int{}
	ink := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r != r0 || g != g0 || bl != b0 {
				ink++
			}
			counts[(r>>12)<<8|(g>>12)<<4|bl>>12]++
		}
	}
	s := pixelStats{ink: float64(ink) / float64(b.Dx()*b.Dy())}
	for _, c := range counts {
		if c >= 50 {
			s.colours++
		}
	}
	return s
}

// countNear counts pixels within 40 of (r, g, b) in every channel.
func countNear(img image.Image, r, g, b int) int {
	n := 0
	bd := img.Bounds()
	for y := bd.Min.Y; y < bd.Max.Y; y++ {
		for x := bd.Min.X; x < bd.Max.X; x++ {
			pr, pg, pb, _ := img.At(x, y).RGBA()
			if abs(int(pr>>8)-r) <= 40 && abs(int(pg>>8)-g) <= 40 && abs(int(pb>>8)-b) <= 40 {
				n++
			}
		}
	}
	return n
}

func abs(v int) int { return max(v, -v) }

type viewState struct{ Cx, Cy, Scale, Fit float64 }

// TestMapInBrowser drives the served site as a person would, on a map of
// 20,000 domains (the million-domain map is BenchmarkMapInBrowser's: its
// fixture alone takes minutes under -race).
func TestMapInBrowser(t *testing.T) {
	ctx := browser(t, 3*time.Minute)
	ts := newTestSite(t, fixture{cfg: graphgen.Config{Domains: 20_000, Edges: 150_000, Seed: 5, Communities: 16}}, nil)
	took := openMap(t, ctx, ts.http.URL+"/")
	t.Logf("20,000 domains: map ready %v ms after navigation started (%v with the browser's start)", eval[float64](t, ctx, "window.mapthenet.readyAt"), took)

	// The whole map: colours by community, bundles between them.
	img := screenshot(t, ctx)
	st := statsOf(img)
	if st.ink < 0.03 || st.colours < 8 {
		t.Errorf("the map looks blank: %.1f%% ink, %d colours", 100*st.ink, st.colours)
	}
	// The points themselves cover the map, not a corner or a dot of it.
	if ink := eval[float64](t, ctx, "window.mapthenet.inkShare()"); ink < 0.01 {
		t.Errorf("the points cover %.2f%% of the map", 100*ink)
	} else {
		t.Logf("the points cover %.1f%% of the map", 100*ink)
	}
	if by := eval[string](t, ctx, "window.mapthenet.colorBy()"); by != "community" {
		t.Errorf("coloured by %q, want community", by)
	}
	legend := eval[string](t, ctx, "document.getElementById('legend-rows').textContent")
	if top := ts.w.names[ts.w.ranked[0]]; !strings.Contains(legend, top) {
		t.Errorf("the legend %q does not name the top domain %s", legend, top)
	}

	// Search a domain: it is selected, its links are drawn and listed,
	// and the view moved in to its neighbourhood.
	target := ts.w.names[ts.w.ranked[40]]
	before := eval[viewState](t, ctx, "window.mapthenet.view()")
	err := chromedp.Do(ctx,
		chromedp.Click(chromedp.CSS("#search")),
		chromedp.SendKeys(chromedp.CSS("#search"), "https://www."+target+"/some/page"+kb.Enter),
		poll(fmt.Sprintf("window.mapthenet.selected === %q && !window.mapthenet.busy && !window.mapthenet.flying", target)))
	if err != nil {
		t.Fatalf("searching %s: %v", target, err)
	}
	after := eval[viewState](t, ctx, "window.mapthenet.view()")
	if after.Scale <= before.Scale {
		t.Errorf("the search did not zoom in: %+v → %+v", before, after)
	}
	if n := eval[int](t, ctx, "window.mapthenet.linksDrawn"); n == 0 {
		t.Errorf("no links drawn for %s", target)
	}
	name := eval[string](t, ctx, "document.getElementById('sel-name').textContent")
	ins := eval[int](t, ctx, "document.querySelectorAll('#in-list li').length")
	if name != target || ins == 0 {
		t.Errorf("the panel shows %q with %d in-links", name, ins)
	}
	img = screenshot(t, ctx)
	ring := countNear(img, 0xe4, 0x00, 0x7c)
	inLines, outLines := countNear(img, 0xe4, 0x58, 0x0b), countNear(img, 0x1f, 0x6f, 0xd1)
	if ring < 30 || inLines+outLines < 100 {
		t.Errorf("the screenshot shows %d pixels of the selection ring and %d+%d of links", ring, inLines, outLines)
	}

	// Keyboard: + zooms in, an arrow pans.
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#help")), chromedp.KeyEvent("+"), chromedp.KeyEvent(kb.ArrowRight), poll("!window.mapthenet.flying"))
	if err != nil {
		t.Fatal(err)
	}
	moved := eval[viewState](t, ctx, "window.mapthenet.view()")
	if moved.Scale <= after.Scale || moved.Cx <= after.Cx {
		t.Errorf("keys did not zoom and pan: %+v → %+v", after, moved)
	}

	// The permalink reloads into the same view and selection.
	// The address follows the view a quarter second later: wait until it
	// holds the view (as map.js writes it), not a fixed 300 ms, which a
	// loaded machine's timers overshoot.
	const hashHoldsView = `(function () {
		var p = new URLSearchParams(location.hash.slice(1)), v = window.mapthenet.view();
		return p.get("x") === v.cx.toPrecision(7) && p.get("y") === v.cy.toPrecision(7) && p.get("z") === (v.scale / v.fit).toPrecision(5);
	})()`
	if err := chromedp.Do(ctx, poll(hashHoldsView)); err != nil {
		t.Fatalf("the address does not follow the view %+v: %v (it is %q)", moved, err, eval[string](t, ctx, "location.hash"))
	}
	hash := eval[string](t, ctx, "location.hash")
	if !strings.Contains(hash, "d="+target) {
		t.Fatalf("permalink %q lacks the selection", hash)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	openMap(t, ctx, ts.http.URL+"/"+hash)
	again := eval[viewState](t, ctx, "window.mapthenet.view()")
	if sel := eval[string](t, ctx, "window.mapthenet.selected"); sel != target {
		t.Errorf("the permalink selects %q, want %q", sel, target)
	}
	if !near(again.Cx, moved.Cx, 1e-4*math.Abs(moved.Cx)+1e-3) || !near(again.Cy, moved.Cy, 1e-4*math.Abs(moved.Cy)+1e-3) || !near(again.Scale, moved.Scale, 1e-3*moved.Scale) {
		t.Errorf("the permalink's view %+v, want %+v", again, moved)
	}

	// Follow a link from the panel to another domain's page.
	other := eval[string](t, ctx, "document.querySelector('#in-list a').textContent")
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#in-list a")), chromedp.WaitVisible(chromedp.CSS("h1.domain")))
	if err != nil {
		t.Fatalf("following the link to %s: %v", other, err)
	}
	if h1 := eval[string](t, ctx, "document.querySelector('h1.domain').textContent"); h1 != other {
		t.Errorf("the domain page shows %q, want %q", h1, other)
	}
	if n := eval[int](t, ctx, "document.querySelectorAll('#out li, #in li').length"); n == 0 {
		t.Error("the domain page lists no links")
	}
	// Back to the map from the page, on that domain.
	if eval[bool](t, ctx, "!!document.getElementById('onmap')") {
		err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#onmap")), chromedp.WaitVisible(chromedp.CSS("#overlay")),
			poll("window.mapthenet && window.mapthenet.settled && !window.mapthenet.busy && !window.mapthenet.flying"))
		if err != nil {
			t.Fatal(err)
		}
		if sel := eval[string](t, ctx, "window.mapthenet.selected"); sel != other {
			t.Errorf("show on the map selects %q, want %q", sel, other)
		}
	}

	// The rankings, and a domain from them.
	err = chromedp.Do(ctx, chromedp.Navigate(ts.http.URL+"/rankings"), chromedp.WaitVisible(chromedp.CSS("table.ranks")))
	if err != nil {
		t.Fatal(err)
	}
	if rows := eval[int](t, ctx, "document.querySelectorAll('table.ranks tbody tr').length"); rows != rankingsPerPage {
		t.Errorf("the rankings show %d rows", rows)
	}
	first := ts.w.names[ts.w.ranked[0]]
	err = chromedp.Do(ctx, chromedp.Click(chromedp.CSS("table.ranks tbody tr a")), chromedp.WaitVisible(chromedp.CSS("h1.domain")))
	if err == nil {
		if got := eval[string](t, ctx, "location.pathname"); got != "/d/"+first {
			t.Errorf("the first ranked links to %s", got)
		}
	}
	if err != nil {
		t.Fatalf("from the rankings to %s: %v", first, err)
	}
	img = screenshot(t, ctx)
	if st := statsOf(img); st.ink < 0.02 {
		t.Errorf("the domain page looks blank: %.1f%% ink", 100*st.ink)
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
