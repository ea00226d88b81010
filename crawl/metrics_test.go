package crawl

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/simweb"
)

// flatten turns metric families into "name{label=value,...}" → value.
func flatten(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			key := name
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			case m.Untyped != nil:
				out[key] = m.GetUntyped().GetValue()
			default:
				out[key] = 1 // present
			}
		}
	}
	return out
}

func gathered(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		m[f.GetName()] = f
	}
	return flatten(m)
}

// scrape reads /metrics as Prometheus would.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("scrape: %s", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return flatten(fams)
}

func sumOf(m map[string]float64, prefix string) float64 {
	s := 0.0
	for k, v := range m {
		if strings.HasPrefix(k, prefix+"{") || k == prefix {
			s += v
		}
	}
	return s
}

// The metrics served during and after a simulated-web crawl agree with
// the crawl's Stats and with what the web saw.
func TestMetricsSimweb(t *testing.T) {
	w, opts := startSimweb(t, simweb.Config{Seed: 11, Sites: 12, SpecialShare: 0.2,
		Skip: []simweb.Kind{simweb.KindRobotsHang, simweb.KindSlow, simweb.KindPlatform, simweb.KindCrawlDelay}})
	store := openStore(t)
	opts.Seeds = []string{writeFile(t, "seeds.txt", strings.Join(w.Seeds(), "\n"))}
	opts.UntilIdle = true
	opts.MinDelay = 5 * time.Millisecond
	opts.MinDelaySet = true
	reg, m := NewRegistry()
	opts.Metrics = m
	srv, err := ServeMetrics("127.0.0.1:0", reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	url := "http://" + srv.Addr().String() + "/metrics"

	type result struct {
		stats Stats
		err   error
	}
	done := make(chan result, 1)
	go func() {
		s, err := Run(context.Background(), store, opts)
		done <- result{s, err}
	}()
	during := scrape(t, url) // whatever the crawl has done by now
	if _, ok := during["mapthenet_crawl_sites_in_flight"]; !ok {
		t.Errorf("no sites_in_flight gauge mid-crawl")
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	got := scrape(t, url)
	if during["mapthenet_crawl_visits_total{outcome=ok}"] > got["mapthenet_crawl_visits_total{outcome=ok}"] {
		t.Errorf("a counter went down")
	}
	st := r.stats
	check := func(name string, got, want float64) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	check("visits", sumOf(got, "mapthenet_crawl_visits_total"), float64(st.Visits))
	for _, o := range data.Outcomes {
		check("visits "+string(o), got["mapthenet_crawl_visits_total{outcome="+string(o)+"}"], float64(st.Outcomes[o]))
	}
	check("pages", got["mapthenet_crawl_pages_total"], float64(st.Pages))
	check("bytes", got["mapthenet_crawl_bytes_read_total"], float64(st.Bytes))
	check("abandoned", got["mapthenet_crawl_visits_abandoned_total"], 0)
	check("in flight", got["mapthenet_crawl_sites_in_flight"], 0)
	check("due", got["mapthenet_crawl_domains_due"], 0)
	check("waiting", got["mapthenet_crawl_domains_waiting"], 0)

	// Requests by class match the web's log of answered requests.
	classes := map[string]float64{}
	for _, req := range w.Requests() {
		if req.Status != 0 {
			classes[fmt.Sprintf("%dxx", req.Status/100)]++
		}
	}
	for _, c := range []string{"2xx", "3xx", "4xx", "5xx"} {
		check("requests "+c, got["mapthenet_crawl_requests_total{class="+c+"}"], classes[c])
	}
	if got["mapthenet_crawl_requests_total{class=error}"] == 0 {
		t.Errorf("no request without an answer counted (bad_cert and http_only sites refuse TLS)")
	}
	// Every named robots.txt case shows up under its result.
	for _, r := range []string{RobotsParsed, RobotsOptedOut, RobotsNoRules, RobotsUnavailable, RobotsRedirects} {
		if got["mapthenet_crawl_robots_total{result="+r+"}"] == 0 {
			t.Errorf("robots result %s never counted", r)
		}
	}
	if got["go_goroutines"] == 0 {
		t.Error("no Go runtime metrics")
	}
	if err := srv.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// A nil *Metrics counts nothing and does not panic.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.request(200, nil)
	m.read(10)
	m.robotsRead(&hostRobots{})
	m.visited(&data.VisitResult{})
	m.visitEnded(true)
	m.scheduleLoaded()
	m.queues(1, 2, 3)
}

// mapthenet_build_info is 1 and names the build in its labels.
func TestBuildInfoMetric(t *testing.T) {
	reg, _ := NewRegistry()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "mapthenet_build_info" {
			continue
		}
		m := mf.GetMetric()[0]
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		if m.GetGauge().GetValue() != 1 || labels["version"] == "" || labels["goversion"] == "" {
			t.Errorf("mapthenet_build_info = %v %v", m.GetGauge().GetValue(), labels)
		}
		return
	}
	t.Error("no mapthenet_build_info metric")
}
