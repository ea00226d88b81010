package simweb

import (
	"io"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the process's user+system CPU time: the machine running the
// benchmarks is shared, so pages per CPU second is the figure that holds.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchURLs lists every page of the normal sites, site by site (as a
// crawler reads them: one connection per host, kept alive).
func benchURLs(w *Web, scheme string) []string {
	var out []string
	for _, s := range w.world.sites {
		if s.Kind != KindNormal {
			continue
		}
		for _, h := range s.hosts {
			for path, p := range h.pages {
				if p.kind != pageRaw {
					out = append(out, scheme+"://"+h.name+path)
				}
			}
		}
	}
	return out
}

func benchServe(b *testing.B, scheme string) {
	w, err := New(Config{Seed: 1, Sites: 2000, NoNamed: true})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	if err := w.Start(); err != nil {
		b.Fatal(err)
	}
	tr := w.Transport()
	tr.MaxIdleConns = 64
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	urls := benchURLs(w, scheme)
	// Certificates are minted once per host for the web's life: setup, not
	// serving.
	if err := w.WarmCertificates(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	b.ReportAllocs()
	cpu0 := cpuTime()
	for i := 0; b.Loop(); i++ {
		resp, err := c.Get(urls[i%len(urls)])
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d", urls[i%len(urls)], resp.StatusCode)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "pages/s")
	// Client and server together, TLS handshakes (one per host) included.
	b.ReportMetric(float64(b.N)/(cpuTime()-cpu0).Seconds(), "pages/cpu-s")
}

// Client and server share the CPU: run with -cpu 1 for "one core".
func BenchmarkServeHTTP(b *testing.B)  { benchServe(b, "http") }
func BenchmarkServeHTTPS(b *testing.B) { benchServe(b, "https") }

// Building a web of 10,000 sites and its expected edges.
func BenchmarkNewLargeWeb(b *testing.B) {
	for b.Loop() {
		w, err := New(Config{Seed: 1, Sites: 10000, SpecialShare: 0.05})
		if err != nil {
			b.Fatal(err)
		}
		_ = w.ExpectedEdges()
		_ = w.Close()
	}
}
