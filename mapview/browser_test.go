package mapview

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/internal/browsertest"
)

// Chromium for these tests: package internal/browsertest.
var browser = browsertest.Start

// writePage writes the map's page into a temporary directory and returns
// its file:// address.
func writePage(t *testing.T, m *Map) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "map.html")
	err := WriteFile(path, func(w io.Writer) error { return WriteHTML(w, m, HTMLOptions{}) })
	if err != nil {
		t.Fatal(err)
	}
	return "file://" + path
}

// load opens the page and waits for its ready flag.
func load(t *testing.T, ctx context.Context, url string) time.Duration {
	t.Helper()
	start := time.Now()
	err := chromedp.Do(ctx,
		chromedp.Navigate(url),
		chromedp.Poll[chromedp.Void]("window.mapthenet && window.mapthenet.ready",
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(90*time.Second)),
	)
	if err != nil {
		t.Fatalf("loading %s: %v", url, err)
	}
	return time.Since(start)
}

// clearSearch empties the search box (SetValue cannot set "": it reads the
// value back and takes an empty answer for a failure).
var clearSearch = chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
	_, err := chromedp.Evaluate[bool]("(document.getElementById('search').value = '', true)")(ctx, t)
	return err
})

// searchAndCheck types name into the search box, presses Enter, and checks
// the page reports it highlighted once the flight ends.
func searchAndCheck(t *testing.T, ctx context.Context, typed, want string) {
	t.Helper()
	err := chromedp.Do(ctx,
		clearSearch,
		chromedp.SendKeys(chromedp.CSS("#search"), typed+kb.Enter),
		chromedp.Poll[chromedp.Void]("!window.mapthenet.flying", chromedp.WithPollingInterval(50*time.Millisecond)),
	)
	var got string
	if err == nil {
		got, err = chromedp.Run(ctx, chromedp.Evaluate[string]("window.mapthenet.highlighted"))
	}
	if err != nil {
		t.Fatalf("searching %q: %v", typed, err)
	}
	if got != want {
		t.Errorf("after searching %q the page highlights %q, want %q", typed, got, want)
	}
}

// screenshot takes a picture of the page, keeps it in dir, and returns it
// decoded.
func screenshot(t *testing.T, ctx context.Context, dir string) image.Image {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	// MAPTHENET_SCREENSHOT_DIR keeps the screenshots for a person to look at.
	if keep := os.Getenv("MAPTHENET_SCREENSHOT_DIR"); keep != "" {
		dir = keep
	}
	path := filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".png")
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	return img
}

// highlightPixels counts pixels of the highlight ring's colour (#e4007c),
// which nothing else on the page uses.
func highlightPixels(img image.Image) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, 0xe4) && near(g>>8, 0x00) && near(bl>>8, 0x7c) {
				n++
			}
		}
	}
	return n
}

func near(a uint32, b int) bool { return int(a)-b <= 24 && b-int(a) <= 24 }

func TestPageInBrowser(t *testing.T) {
	ctx := browser(t, 60*time.Second)
	rows, words := genWeb(3000, 2)
	// Outside text that must stay text: a link word that tries to close
	// the data element and run a script.
	words = append(words, data.LinkWordRow{Domain: rows[0].Domain, Word: "</script><script>window.pwned=1</script><!--", Sites: 99})
	m, err := Load(writeSnapshot(t, t.TempDir(), rows, words), DefaultWords)
	if err != nil {
		t.Fatal(err)
	}
	url := writePage(t, m)
	took := load(t, ctx, url)
	t.Logf("3,000 points: ready %v after navigation", took)

	pwned, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("window.pwned === 1"))
	if err != nil || pwned {
		t.Fatalf("a link word ran as script (pwned %v, %v)", pwned, err)
	}

	target := m.Points[1234].Domain
	searchAndCheck(t, ctx, target, target)
	// A URL or a host under the domain finds the domain.
	searchAndCheck(t, ctx, "https://www."+m.Points[7].Domain+"/some/page", m.Points[7].Domain)
	searchAndCheck(t, ctx, strings.ToUpper(target), target)

	// The highlight is drawn, not just recorded.
	img := screenshot(t, ctx, t.TempDir())
	if b := img.Bounds(); b.Dx() < 100 || b.Dy() < 100 {
		t.Fatalf("screenshot is %v", b)
	}
	if n := highlightPixels(img); n < 30 {
		t.Errorf("the screenshot shows %d pixels of the highlight ring", n)
	}
	if n := inkPixelsAnyBackground(img); n < 1000 {
		t.Errorf("the screenshot is nearly blank (%d pixels of ink)", n)
	}

	// Hovering a point shows its name, rank, tier and link words.
	// (Found first, so that it is in view and clear of the panels.)
	searchAndCheck(t, ctx, rows[0].Domain, rows[0].Domain)
	at, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](fmt.Sprintf("window.mapthenet.screenOf(%q)", rows[0].Domain)))
	if err != nil || len(at) != 2 {
		t.Fatalf("screenOf: %v %v", at, err)
	}
	err = chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, at[0], at[1]))
	var tipText string
	if err == nil {
		tipText, err = chromedp.Run(ctx, chromedp.Text(chromedp.CSS("#tip"), chromedp.NodeVisible))
	}
	if err != nil {
		t.Fatalf("hover: %v", err)
	}
	for _, want := range []string{rows[0].Domain, "rank 1", "tier 1", "</script><script>window.pwned=1</script><!--"} {
		if !strings.Contains(tipText, want) {
			t.Errorf("tooltip %q lacks %q", tipText, want)
		}
	}

	// A name that is not on the map says so and keeps the highlight.
	err = chromedp.Do(ctx,
		clearSearch,
		chromedp.SendKeys(chromedp.CSS("#search"), "nowhere.invalid"+kb.Enter),
	)
	var msg, still string
	if err == nil {
		msg, err = chromedp.Run(ctx, chromedp.TextContent(chromedp.CSS("#message")))
	}
	if err == nil {
		still, err = chromedp.Run(ctx, chromedp.Evaluate[string]("window.mapthenet.highlighted"))
	}
	if err != nil || !strings.Contains(msg, "not on the map") || still != rows[0].Domain {
		t.Errorf("unknown name: message %q, highlighted %q, %v", msg, still, err)
	}
}

// TestPageInBrowser200k loads a page of 200,000 points and searches it. It
// reports the load time; it asserts no speed (a loaded CI machine varies),
// only that the page works within a generous timeout.
func TestPageInBrowser200k(t *testing.T) {
	ctx := browser(t, 120*time.Second)
	m := genMap(200_000, 1)
	url := writePage(t, m)
	st, err := os.Stat(strings.TrimPrefix(url, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	took := load(t, ctx, url)
	loadMs, err := chromedp.Run(ctx, chromedp.Evaluate[float64]("window.mapthenet.loadMs"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("200,000 points, page %.1f MB: ready %v after navigation (script %.0f ms to the first frame)", float64(st.Size())/1e6, took, loadMs)
	whole, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64]("[window.mapthenet.benchDraw(5), window.mapthenet.pointsMs, window.mapthenet.labelsMs]"))
	if err != nil {
		t.Fatal(err)
	}
	panZoom(t, ctx)
	zoomed, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64]("[window.mapthenet.benchDraw(5), window.mapthenet.pointsMs, window.mapthenet.labelsMs]"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("200,000 points: a frame takes %.1f ms to draw at the whole map (points %.1f, labels %.1f), %.1f ms zoomed in (%.1f, %.1f)",
		whole[0], whole[1], whole[2], zoomed[0], zoomed[1], zoomed[2])
	target := m.Points[len(m.Points)-1].Domain // the last drawn, least ranked
	searchAndCheck(t, ctx, target, target)
	img := screenshot(t, ctx, t.TempDir())
	if n := highlightPixels(img); n < 30 {
		t.Errorf("the screenshot shows %d pixels of the highlight ring", n)
	}
}

// panZoom turns the wheel over the middle of the page and drags it, and
// checks that the view zoomed in and moved.
func panZoom(t *testing.T, ctx context.Context) {
	t.Helper()
	type view struct{ Cx, Cy, Scale float64 }
	get := func() view {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[view]("window.mapthenet.view()"))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	frames := "window.mapthenet.frames"
	before := get()
	n0, _ := chromedp.Run(ctx, chromedp.Evaluate[int](frames))
	// DeltaX must be non-zero to be sent at all (the protocol wants both).
	wheel := func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 0.01, -400 }
	err := chromedp.Do(ctx, chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, 640, 400, wheel),
		chromedp.Poll[chromedp.Void](fmt.Sprintf("%s > %d", frames, n0)))
	if err != nil {
		t.Fatalf("wheel: %v", err)
	}
	zoomed := get()
	if zoomed.Scale <= before.Scale {
		t.Errorf("the wheel did not zoom in: scale %v → %v", before.Scale, zoomed.Scale)
	}
	n1, _ := chromedp.Run(ctx, chromedp.Evaluate[int](frames))
	err = chromedp.Do(ctx,
		chromedp.MouseEvent(input.DispatchMouseEventTypeMousePressed, 640, 400, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 540, 350, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseMoved, 440, 300, chromedp.ButtonLeft),
		chromedp.MouseEvent(input.DispatchMouseEventTypeMouseReleased, 440, 300, chromedp.ButtonLeft),
		chromedp.Poll[chromedp.Void](fmt.Sprintf("%s > %d", frames, n1)),
	)
	if err != nil {
		t.Fatalf("drag: %v", err)
	}
	// Dragging the map left and up moves the view's centre right and down
	// (y is up on the map).
	if moved := get(); moved.Cx <= zoomed.Cx || moved.Cy >= zoomed.Cy || moved.Scale != zoomed.Scale {
		t.Errorf("the drag did not pan: %+v → %+v", zoomed, moved)
	}
}

// inkPixelsAnyBackground counts pixels that differ from the top-left one.
func inkPixelsAnyBackground(img image.Image) int {
	b := img.Bounds()
	r0, g0, b0, _ := img.At(b.Max.X-1, b.Max.Y/2).RGBA()
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r != r0 || g != g0 || bl != b0 {
				n++
			}
		}
	}
	return n
}
