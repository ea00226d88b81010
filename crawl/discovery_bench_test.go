package crawl

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/graph"
)

var (
	benchDiscover = flag.Int("bench-discover", 2_000_000, "BenchmarkCrawlDiscovery: new domains to discover")
	benchPerPage  = flag.Int("bench-per-page", 2*MaxLinkDomains, "BenchmarkCrawlDiscovery: new domains each home page names")
)

// hostileWeb serves, on loopback, a home page on every host that names
// perPage domains nobody has named before (no robots.txt: 404).
type hostileWeb struct {
	srv     *httptest.Server
	perPage int
	next    atomic.Int64
	pages   atomic.Int64
}

func newHostileWeb(perPage int) *hostileWeb {
	h := &hostileWeb{perPage: perPage}
	h.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(rw, r)
			return
		}
		h.pages.Add(1)
		first := h.next.Add(int64(h.perPage)) - int64(h.perPage)
		var b strings.Builder
		b.Grow(h.perPage * 40)
		b.WriteString("<html><body>")
		for i := first; i < first+int64(h.perPage); i++ {
			fmt.Fprintf(&b, `<a href="http://d%08d.test/">x</a>`, i)
		}
		b.WriteString("</body></html>")
		rw.Header().Set("Content-Type", "text/html")
		rw.Write([]byte(b.String()))
	}))
	return h
}

// heapPeak samples the live heap every 20 ms until stop is called.
func heapPeak() (stop func() uint64) {
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(done); wg.Wait(); return peak }
}

// BenchmarkCrawlDiscovery crawls a loopback web where every home page
// names -bench-per-page new domains (a link farm; twice what a visit
// keeps) until -bench-discover domains
// were discovered, into an on-disk store with default options, and reports
// the peak heap and peak RSS (issue 12: under 1 GiB for 2 million). The
// crawl keeps MaxLinkDomains of each page and at most DefaultMaxFound in
// line; the rest wait in the store.
//
//	go test -run '^$' -bench CrawlDiscovery -benchtime 1x ./crawl/
func BenchmarkCrawlDiscovery(b *testing.B) {
	web := newHostileWeb(*benchPerPage)
	defer web.srv.Close()
	_, port, _ := strings.Cut(web.srv.Listener.Addr().String(), ":")
	// A few spare visits: on a busy machine some robots.txt requests
	// time out, and those visits find nothing.
	visits := (*benchDiscover/MaxLinkDomains + 1) * 21 / 20
	for range b.N {
		b.StopTimer()
		store, err := graph.Open(filepath.Join(b.TempDir(), "store"), graph.Options{})
		if err != nil {
			b.Fatal(err)
		}
		web.next.Store(0)
		o := Options{
			MinDelaySet: true,
			ConnectTo:   []fetch.ConnectTo{{ToPort: port}},
			Resolver:    stubResolver{},
			Sign:        func(*http.Request) error { return nil },
			Seeds:       []string{writeBenchFile(b, "seeds.txt", "d-seed.test\n")},
			UntilIdle:   true,
			MaxSites:    visits,
			// A memory benchmark: a shared, busy machine must not turn
			// slow responses into timeouts (and fewer domains found).
			ResponseTimeout: 2 * time.Minute,
			ConnectTimeout:  time.Minute,
		}
		b.StartTimer()
		stop := heapPeak()
		t0 := time.Now()
		stats, err := Run(context.Background(), store, o)
		elapsed := time.Since(t0)
		peak := stop()
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		if err := store.Close(); err != nil {
			b.Fatal(err)
		}
		discovered := stats.Discovered + stats.Deferred
		b.ReportMetric(float64(discovered), "discovered")
		b.ReportMetric(float64(stats.Visits), "visits")
		b.ReportMetric(float64(stats.Outcomes["ok"]), "ok-visits")
		b.ReportMetric(elapsed.Seconds(), "s")
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(peakRSS(), "peak-MiB")
		if discovered < *benchDiscover {
			b.Errorf("discovered %d, want %d (visits %v)", discovered, *benchDiscover, stats.Outcomes)
		}
		b.StartTimer()
	}
}

func writeBenchFile(b *testing.B, name, text string) string {
	p := filepath.Join(b.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}
