// Package browsertest starts headless Chromium for the tests that drive
// a page for real (the map page of mapview, the served site). It serves
// tests only.
//
// Chromium is Debian's chromium package (.ci/run installs it), which draws
// WebGL with its software renderer. Without a browser the tests skip,
// saying why, unless MAPTHENET_REQUIRE_BROWSER=1 (set by .ci/run) makes a
// missing browser a failure rather than a silent pass.
package browsertest

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Path returns the Chromium to run, or skips (fails, when required) the
// test without one.
func Path(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("MAPTHENET_REQUIRE_BROWSER") == "1" {
		tb.Fatal("no Chromium found (looked for chromium, chromium-browser, google-chrome) and MAPTHENET_REQUIRE_BROWSER=1")
	}
	tb.Skip("no Chromium found: install Debian's chromium package to run the browser tests")
	return ""
}

// Start starts a headless Chromium for one test, stopped (and its
// goroutines ended) when the test ends or timeout passes.
func Start(tb testing.TB, timeout time.Duration) context.Context {
	tb.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(Path(tb)),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox refuses to start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("enable-unsafe-swiftshader", true), // WebGL without a GPU
		chromedp.WindowSize(1280, 800),
	)
	ctx, cancelTimeout := context.WithTimeout(context.Background(), timeout)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancelBrowser := chromedp.NewContext(actx)
	tb.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
		cancelTimeout()
	})
	return bctx
}
