package e2e

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/simweb"
)

var (
	benchBinSites = flag.Int("bench-bin-sites", 10000, "BenchmarkCrawlBinary: sites in the simulated web")
	benchBinQueue = flag.Int("bench-bin-queue", 100000, "BenchmarkCrawlBinary: extra seeded domains waiting in line (the simulated web answers them 404)")
)

// BenchmarkCrawlBinary runs the built mapthenet binary's crawl (--min-delay
// 0, --until-idle) against a simulated web served by this process, so that
// the crawler's own CPU time and peak memory are measured apart from the
// server's: the figures of issue 3 (pages/s, CPU per page, memory with
// 100,000 domains waiting in line).
//
//	go test ./e2e -run '^$' -bench CrawlBinary -benchtime 1x
func BenchmarkCrawlBinary(b *testing.B) {
	bin := buildBinary(b)
	r := serve(b, simweb.Config{Seed: 1, Sites: *benchBinSites, NoNamed: true, Logger: slog.New(slog.DiscardHandler)})
	w, dir := r.web, r.dir
	seeds := filepath.Join(dir, "seeds.txt")
	if err := appendQueued(seeds, *benchBinQueue); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		w.Reset()
		data := filepath.Join(dir, fmt.Sprintf("data-%d", i))
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
		cmd := exec.CommandContext(ctx, bin, "--data-dir", data, "--log-format", "json", "crawl", "--create",
			"--seeds", seeds, "--until-idle", "--min-delay", "0",
			"--connect-to", w.ConnectTo(), "--ca-cert", w.CAFile(), "--now", now.Format(time.RFC3339))
		t0 := time.Now()
		out, err := cmd.CombinedOutput()
		elapsed := time.Since(t0)
		cancel()
		if err != nil {
			b.Fatalf("crawl: %v\n%s", err, tail(out, 2000))
		}
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		reqs := w.Requests()
		pages := 0
		for _, r := range reqs {
			if filepath.Base(r.Path) != "robots.txt" {
				pages++
			}
		}
		b.ReportMetric(float64(pages)/elapsed.Seconds(), "pages/s")
		b.ReportMetric(float64(cpu.Microseconds())/float64(max(1, pages)), "crawler-cpu-µs/page")
		b.ReportMetric(float64(ru.Maxrss)/1024, "crawler-peak-MiB")
		b.ReportMetric(float64(len(reqs)), "requests")
		if v := w.CheckAll(reqs, simweb.Rules{}); len(v) > 0 {
			b.Errorf("%d politeness violations, first: %s", len(v), v[0])
		}
	}
}

// appendQueued adds n domains the simulated web does not serve to a seed
// file: a line of work waiting behind the web's own sites.
func appendQueued(seeds string, n int) error {
	f, err := os.OpenFile(seeds, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(bw, "queued-%07d.example\n", i)
	}
	return errors.Join(bw.Flush(), f.Close())
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
