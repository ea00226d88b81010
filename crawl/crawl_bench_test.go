package crawl

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/simweb"
)

var (
	benchSites = flag.Int("bench-sites", 10000, "sites in BenchmarkCrawlSimweb's simulated web")
	benchQueue = flag.Int("bench-queue", 0, "BenchmarkCrawlSimweb: extra seeded domains the simulated web does not serve, waiting in line behind its sites")
)

// peakRSS is the process's peak resident set (VmHWM) in MiB, 0 when
// /proc is not there.
func peakRSS() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

// warmCertificates makes the simulated web mint every host's certificate
// before the clock starts: simweb signs them one at a time on first use, a
// cost of the test server, not of the crawler.
func warmCertificates(b *testing.B, w *simweb.Web) {
	hosts := make(chan string)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range hosts {
				c, err := tls.Dial("tcp", w.Addr(), &tls.Config{ServerName: h, RootCAs: w.CertPool()})
				if err == nil {
					c.Close()
				}
			}
		}()
	}
	for _, s := range w.Sites() {
		for _, h := range s.Hosts {
			hosts <- h
		}
	}
	close(hosts)
	wg.Wait()
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCrawlSimweb crawls a simulated web of -bench-sites sites with
// --min-delay 0, every site seeded, into an on-disk store, and reports
// pages/s and CPU time per page. The simulated web's servers run in the
// same process, so the CPU figure includes serving the pages too.
//
//	go test -run '^$' -bench CrawlSimweb -benchtime 1x ./crawl/
func BenchmarkCrawlSimweb(b *testing.B) {
	w, opts := startSimweb(b, simweb.Config{Seed: 1, Sites: *benchSites, NoNamed: true,
		Logger: slog.New(slog.DiscardHandler)})
	seeds := filepath.Join(b.TempDir(), "seeds.txt")
	if err := w.WriteSeeds(seeds); err != nil {
		b.Fatal(err)
	}
	if *benchQueue > 0 {
		// Domains in line behind the simulated web's own: memory must not
		// grow much with the line's length (issue 3: under 1 GiB with
		// 100,000 waiting).
		f, err := os.OpenFile(seeds, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriter(f)
		for i := range *benchQueue {
			fmt.Fprintf(bw, "queued-%07d.example\n", i)
		}
		if err := errors.Join(bw.Flush(), f.Close()); err != nil {
			b.Fatal(err)
		}
	}
	warmCertificates(b, w)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		store, err := graph.Open(filepath.Join(b.TempDir(), "store"), graph.Options{Create: true})
		if err != nil {
			b.Fatal(err)
		}
		o := opts
		o.Seeds = []string{seeds}
		o.UntilIdle = true
		o.MinDelaySet = true
		o.MinDelay = 0
		w.Reset()
		b.StartTimer()
		cpu0, t0 := cpuTime(), time.Now()
		stats, err := Run(context.Background(), store, o)
		elapsed, cpu := time.Since(t0), cpuTime()-cpu0
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		store.Close()
		b.ReportMetric(float64(stats.Pages)/elapsed.Seconds(), "pages/s")
		b.ReportMetric(float64(cpu.Microseconds())/float64(max(1, stats.Pages)), "cpu-µs/page")
		b.ReportMetric(float64(stats.Visits), "visits")
		b.ReportMetric(float64(len(w.Requests())), "requests")
		b.ReportMetric(peakRSS(), "peak-MiB")
		if v := w.CheckAll(w.Requests(), simweb.Rules{}); len(v) > 0 {
			var s []string
			for _, x := range v[:min(5, len(v))] {
				s = append(s, x.String())
			}
			b.Errorf("%d violations, e.g.\n%s", len(v), strings.Join(s, "\n"))
		}
		b.StartTimer()
	}
}
