package site

import (
	"context"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/snapshot"
)

// The million-domain benchmarks: graphgen's M graph (1,000,000 domains,
// 10,000,000 links) with 64 planted communities, written as a snapshot
// once into $MAPTHENET_SITE_BENCH_DIR (kept between runs; a temporary
// directory otherwise: writing it takes a few minutes).
//
//	MAPTHENET_SITE_BENCH_DIR=/tmp/sitebench go test -run '^$' -bench 'MapInBrowser|DomainPagesWrk|LoadIndex' -benchtime 1x ./site

var benchFixture = fixture{cfg: graphgen.Config{Domains: 1_000_000, Edges: 10_000_000, Seed: 1, Communities: 64}}

func benchDataDir(b *testing.B) (string, *world) {
	b.Helper()
	dir := os.Getenv("MAPTHENET_SITE_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	if _, err := os.Readlink(filepath.Join(dir, snapshot.DirName, snapshot.CurrentName)); err == nil {
		return dir, nil
	}
	start := time.Now()
	w := writeFixture(b, dir, benchFixture)
	b.Logf("wrote the 1M-domain snapshot in %v", time.Since(start).Round(time.Second))
	return dir, w
}

func benchServer(b *testing.B) (*Server, string) {
	b.Helper()
	dir, _ := benchDataDir(b)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	start, c0 := time.Now(), cpuSeconds()
	s, err := New(Options{DataDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	took, cpu := time.Since(start), cpuSeconds()-c0
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(took.Seconds(), "load-s")
	b.ReportMetric(cpu, "load-cpu-s")
	b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "heap-MiB")
	ix := s.cur.Load()
	b.Logf("load average %s; loaded %d domains, %d links in %v (%.1f CPU-seconds); heap %.0f MiB; map payloads as sent: meta %d kB, points %.1f MB (raw %.1f), details %.1f MB (raw %.1f), names %.1f MB (raw %.1f)",
		loadAverage(), ix.Len(), ix.edges, took.Round(time.Millisecond), cpu, float64(after.HeapAlloc-before.HeapAlloc)/(1<<20),
		len(ix.mapData.meta.body)>>10, float64(len(ix.mapData.points.body))/1e6, float64(ix.mapData.points.size)/1e6,
		float64(len(ix.mapData.details.body))/1e6, float64(ix.mapData.details.size)/1e6,
		float64(len(ix.mapData.names.body))/1e6, float64(ix.mapData.names.size)/1e6)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, s, s.log) }()
	b.Cleanup(func() {
		cancel()
		<-done
		s.Close()
	})
	return s, "http://" + ln.Addr().String()
}

// BenchmarkLoadIndex: a 1M-domain snapshot into memory. cpu-s is the
// process's CPU time (user and system) a load: on a shared machine it
// varies less than the time on the clock.
func BenchmarkLoadIndex(b *testing.B) {
	dir, _ := benchDataDir(b)
	var ix *Index
	cpu, heap := 0.0, 0.0
	for b.Loop() {
		ix = nil
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		c0 := cpuSeconds()
		src, err := openSource(dir, "")
		if err != nil {
			b.Fatal(err)
		}
		ix, err = loadIndex(src, mapOptions{})
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuSeconds() - c0
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heap = float64(after.HeapAlloc-before.HeapAlloc) / (1 << 20)
	}
	b.ReportMetric(cpu/float64(b.N), "cpu-s")
	b.ReportMetric(heap, "heap-MiB")
	b.Logf("load average %s", loadAverage())
	runtime.KeepAlive(ix)
}

// cpuSeconds is the CPU time the process has used (user and system).
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// BenchmarkMapInBrowser: the map of a million domains in headless
// Chromium (software WebGL): ready (first frame drawn, from navigation
// start), then frame times while panning at the whole-map zoom and zoomed
// in, and a search until its links are drawn.
func BenchmarkMapInBrowser(b *testing.B) {
	s, base := benchServer(b)
	ctx := browser(b, 10*time.Minute)
	ix := s.cur.Load()
	for i := 0; i < b.N; i++ {
		openMap(b, ctx, base+"/")
		ready := eval[float64](b, ctx, "window.mapthenet.readyAt")
		names := eval[float64](b, ctx, "window.mapthenet.namesMs")
		b.Logf("start-up steps (ms since navigation): %s; responses: %s", eval[string](b, ctx, "JSON.stringify(window.mapthenet.marks)"),
			eval[string](b, ctx, `JSON.stringify(performance.getEntriesByType("resource").concat(performance.getEntriesByType("navigation")).map(function (e) { return [e.name.replace(/^.*\//, ""), Math.round(e.startTime), Math.round(e.responseStart), Math.round(e.responseEnd), e.encodedBodySize] }))`))
		whole := eval[struct{ Mean, Worst float64 }](b, ctx, "window.mapthenet.benchPan(30)")
		target := ix.name(ix.byRank[5000])
		// In the page's own clock: from the search to its links drawn.
		search, err := chromedp.Run(ctx, chromedp.Evaluate[float64](fmt.Sprintf(
			"(async () => { const t = performance.now(); await window.mapthenet.search(%q); return performance.now() - t })()", target),
			chromedp.EvalAwaitPromise))
		if err == nil {
			err = chromedp.Do(ctx, poll(fmt.Sprintf("window.mapthenet.selected === %q && !window.mapthenet.flying", target)))
		}
		if err != nil {
			b.Fatal(err)
		}
		zoomed := eval[struct{ Mean, Worst float64 }](b, ctx, "window.mapthenet.benchPan(30)")
		parts := eval[[]float64](b, ctx, "[window.mapthenet.pointsMs, window.mapthenet.overlayMs, window.mapthenet.linksDrawn]")
		b.ReportMetric(ready, "ready-ms")
		b.ReportMetric(whole.Mean, "pan-frame-ms")
		b.ReportMetric(zoomed.Mean, "pan-zoomed-frame-ms")
		b.Logf("load average %s; 1M domains: ready %.0f ms after navigation (names %.0f ms); panning the whole map: %.1f ms a frame (worst %.1f); "+
			"search to links drawn %.0f ms; panning zoomed in: %.1f ms (worst %.1f; points %.1f, overlay %.1f, %v links)",
			loadAverage(), ready, names, whole.Mean, whole.Worst, search, zoomed.Mean, zoomed.Worst, parts[0], parts[1], parts[2])
		img := screenshot(b, ctx)
		if st := statsOf(img); st.ink < 0.03 || st.colours < 8 {
			b.Errorf("the 1M map looks blank: %.1f%% ink, %d colours", 100*st.ink, st.colours)
		}
	}
}

// BenchmarkDomainPagesWrk: domain pages under load from wrk on loopback
// (Debian's wrk, which has no fixed-rate mode): random domains of the 1M
// snapshot, asked for with Accept-Encoding: gzip as browsers do, for 30 s
// each: paced at about 1,000 requests a second (20 connections, each
// waiting 20 ms between a response and its next request), then as fast as
// 4 and 16 connections go. The same script by hand:
// wrkScript(names, path, delay).
func BenchmarkDomainPagesWrk(b *testing.B) {
	wrk, err := exec.LookPath("wrk")
	if err != nil {
		b.Skip("no wrk: apt-get install wrk")
	}
	s, base := benchServer(b)
	ix := s.cur.Load()
	names := make([]string, 20000)
	for k := range names {
		names[k] = ix.name(int32((k * 7919) % ix.Len()))
	}
	script := filepath.Join(b.TempDir(), "pages.lua")
	for _, target := range []struct{ name, path string }{{"html", "/d/"}, {"json", "/api/d/"}} {
		for _, run := range []struct{ conns, delay string }{{"20", "20"}, {"4", ""}, {"16", ""}} {
			if err := os.WriteFile(script, []byte(wrkScript(names, target.path, run.delay)), 0o644); err != nil {
				b.Fatal(err)
			}
			load := loadAverage()
			out, err := exec.Command(wrk, "-t", "2", "-c", run.conns, "-d", "30s", "--latency", "-s", script, base).CombinedOutput()
			if err != nil {
				b.Fatalf("wrk: %v\n%s", err, out)
			}
			field := func(re string) string {
				if m := regexp.MustCompile(re).FindStringSubmatch(string(out)); m != nil {
					return m[1]
				}
				return "-"
			}
			how := "as fast as they go"
			if run.delay != "" {
				how = "paced (" + run.delay + " ms between requests)"
			}
			b.Logf("%s pages, %s connections %s: %s requests/s, latency p50 %s, p90 %s, p99 %s, max %s; non-2xx %s; load average %s",
				target.name, run.conns, how, field(`Requests/sec:\s+([\d.]+)`), field(`(?m)^\s+50%\s+(\S+)`), field(`(?m)^\s+90%\s+(\S+)`),
				field(`(?m)^\s+99%\s+(\S+)`), field(`Latency\s+\S+\s+\S+\s+(\S+)`), field(`Non-2xx or 3xx responses: (\d+)`), load)
		}
	}
}

// wrkScript is a wrk script that asks for path+name of each name in turn,
// with Accept-Encoding: gzip, each connection waiting delay ms (if not "")
// between a response and its next request.
func wrkScript(names []string, path, delay string) string {
	var b strings.Builder
	b.WriteString("local names = {\n")
	for _, n := range names {
		fmt.Fprintf(&b, "%q,\n", n)
	}
	fmt.Fprintf(&b, "}\nlocal i = 0\nwrk.headers[\"Accept-Encoding\"] = \"gzip\"\n"+
		"request = function()\n  i = i + 1\n  return wrk.format(\"GET\", %q .. names[(i %% #names) + 1])\nend\n", path)
	if delay != "" {
		fmt.Fprintf(&b, "delay = function() return %s end\n", delay)
	}
	return b.String()
}

// loadAverage is the machine's load average (1, 5, 15 minutes), for the
// figures of a shared machine.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// BenchmarkDomainPage: a domain's page (/d/) and its JSON (/api/d/),
// gzipped, as the server's handler makes them for random domains of the
// 1M snapshot, in process: the CPU time and allocations of a request
// without the network.
func BenchmarkDomainPage(b *testing.B) {
	dir, _ := benchDataDir(b)
	s, err := New(Options{DataDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ix := s.cur.Load()
	for _, path := range []string{"/d/", "/api/d/"} {
		b.Run(strings.Trim(path, "/"), func(b *testing.B) {
			b.ReportAllocs()
			k := 0
			for b.Loop() {
				k++
				r := httptest.NewRequest("GET", path+ix.name(int32((k*7919)%ix.Len())), nil)
				r.Header.Set("Accept-Encoding", "gzip")
				w := httptest.NewRecorder()
				s.ServeHTTP(w, r)
				if w.Code != 200 {
					b.Fatalf("%s: %d", r.URL, w.Code)
				}
			}
		})
	}
}

// BenchmarkDomainReport: one domain's report (what /api/d/ and /d/ build),
// random domains of the 1M snapshot, in process.
func BenchmarkDomainReport(b *testing.B) {
	dir, _ := benchDataDir(b)
	src, err := openSource(dir, "")
	if err != nil {
		b.Fatal(err)
	}
	ix, err := loadIndex(src, mapOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		k++
		ix.report(int32((k*7919)%ix.Len()), 0, 0, linksPerPage)
	}
}
