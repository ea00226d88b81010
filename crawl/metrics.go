package crawl

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mapthenet/mapthenet/buildinfo"
	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/data"
)

// Metrics are the crawl's Prometheus metrics (names prefixed
// mapthenet_crawl_). A nil *Metrics counts nothing, so the crawl's code
// calls it unconditionally. They live in the registry given to NewMetrics,
// never the global one: tests and two crawls in one process stay apart.
type Metrics struct {
	requests  *prometheus.CounterVec // by status class
	visits    *prometheus.CounterVec // recorded, by outcome
	abandoned prometheus.Counter
	failed    prometheus.Counter // visits that ended in an error of ours (not recorded)
	pages     prometheus.Counter
	bytes     prometheus.Counter
	robots    *prometheus.CounterVec // robots.txt reads by result
	schedules prometheus.Counter     // schedules loaded
	due       prometheus.Gauge
	waiting   prometheus.Gauge
	inFlight  prometheus.Gauge
	activity  *Activity // the last hour, for `mapthenet status` and the minute log line
}

// Request classes of mapthenet_crawl_requests_total.
const (
	classError = "error" // no response: DNS, connect, TLS, timeout before headers
)

// Robots results of mapthenet_crawl_robots_total.
const (
	RobotsParsed      = "parsed"      // 2xx: rules read (opted out or not)
	RobotsOptedOut    = "opted_out"   // 2xx whose rules shut our token out of /
	RobotsNoRules     = "no_rules"    // 4xx: no restrictions
	RobotsUnavailable = "unavailable" // 5xx, or a 3xx leading nowhere: site skipped this visit
	RobotsRedirects   = "redirects"   // more than 5 redirects: site skipped this visit
	RobotsError       = "error"       // network error or timeout: site skipped this visit
)

// NewMetrics makes the crawl's metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		activity: NewActivity(nil),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mapthenet_crawl_requests_total",
			Help: "HTTP requests made (robots.txt and redirect hops included), by response status class (2xx..5xx) or error when no response came.",
		}, []string{"class"}),
		visits: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mapthenet_crawl_visits_total",
			Help: "Visits finished and handed to the store, by outcome.",
		}, []string{"outcome"}),
		abandoned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mapthenet_crawl_visits_abandoned_total",
			Help: "Visits dropped whole because the crawl stopped.",
		}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mapthenet_crawl_visits_failed_total",
			Help: "Visits that ended in an internal error and were not recorded.",
		}),
		pages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mapthenet_crawl_pages_total",
			Help: "Pages read in visits handed to the store.",
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mapthenet_crawl_bytes_read_total",
			Help: "Decoded response bytes read (every request, robots.txt included).",
		}),
		robots: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mapthenet_crawl_robots_total",
			Help: "robots.txt reads by result: parsed, opted_out, no_rules (4xx), unavailable (5xx), redirects (too many), error.",
		}, []string{"result"}),
		schedules: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mapthenet_crawl_schedule_loads_total",
			Help: "Times a schedule (rebuilds/current/schedule.parquet) was read.",
		}),
		due: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mapthenet_crawl_domains_due",
			Help: "Domains of the current schedule that are due and not yet visited in this run.",
		}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mapthenet_crawl_domains_waiting",
			Help: "Seeds and domains found in this run in line for a first visit (found ones: at most MaxFound).",
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mapthenet_crawl_sites_in_flight",
			Help: "Sites being visited now.",
		}),
	}
	reg.MustRegister(m.requests, m.visits, m.abandoned, m.failed, m.pages, m.bytes, m.robots,
		m.schedules, m.due, m.waiting, m.inFlight)
	// Every label value exists from the start, so a rate over a class or
	// outcome that has not happened yet reads 0 rather than nothing.
	for _, c := range []string{"2xx", "3xx", "4xx", "5xx", classError} {
		m.requests.WithLabelValues(c)
	}
	for _, o := range data.Outcomes {
		m.visits.WithLabelValues(string(o))
	}
	for _, r := range []string{RobotsParsed, RobotsOptedOut, RobotsNoRules, RobotsUnavailable, RobotsRedirects, RobotsError} {
		m.robots.WithLabelValues(r)
	}
	return m
}

// Activity is the crawl's record of its last hour (nil for nil Metrics).
func (m *Metrics) Activity() *Activity {
	if m == nil {
		return nil
	}
	return m.activity
}

// NewRegistry is a private registry with the crawl's metrics and the Go
// runtime and process collectors.
func NewRegistry() (*prometheus.Registry, *Metrics) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfoGauge())
	return reg, NewMetrics(reg)
}

// buildInfoGauge is mapthenet_build_info: always 1, its labels say which
// build is running (the Prometheus convention for build information).
func buildInfoGauge() prometheus.Collector {
	in := buildinfo.Get()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "mapthenet_build_info",
		Help:        "Which build of mapthenet is running: the module version, commit and Go version as labels; always 1.",
		ConstLabels: prometheus.Labels{"version": in.Version, "revision": in.Revision, "goversion": in.GoVersion},
	})
	g.Set(1)
	return g
}

// request counts one request: its status, or the fetch error that left it
// without a response. A request the stopping crawl cancelled is not counted.
func (m *Metrics) request(status int, fe *fetch.Error) {
	if m == nil {
		return
	}
	switch {
	case status >= 100 && status < 600:
		m.requests.WithLabelValues(strconv.Itoa(status/100) + "xx").Inc()
	case fe != nil && fe.Kind == fetch.KindCanceled:
	default:
		m.requests.WithLabelValues(classError).Inc()
	}
}

func (m *Metrics) read(bytes int64) {
	if m != nil && bytes > 0 {
		m.bytes.Add(float64(bytes))
	}
}

func (m *Metrics) robotsRead(hr *hostRobots) {
	if m == nil {
		return
	}
	var r string
	switch {
	case hr.err != nil:
		r = RobotsError
	case hr.tooMany:
		r = RobotsRedirects
	case hr.optedOut:
		r = RobotsOptedOut
	case hr.available && hr.status >= 200 && hr.status < 300:
		r = RobotsParsed
	case hr.available:
		r = RobotsNoRules
	default:
		r = RobotsUnavailable
	}
	m.robots.WithLabelValues(r).Inc()
}

func (m *Metrics) visited(r *data.VisitResult) {
	if m == nil {
		return
	}
	m.visits.WithLabelValues(string(r.Outcome)).Inc()
	m.pages.Add(float64(r.Pages))
	m.activity.Add(r)
}

func (m *Metrics) visitEnded(abandoned bool) {
	if m == nil {
		return
	}
	if abandoned {
		m.abandoned.Inc()
	} else {
		m.failed.Inc()
	}
}

func (m *Metrics) scheduleLoaded() {
	if m != nil {
		m.schedules.Inc()
	}
}

// queues sets the gauges of what is due, waiting and in flight.
func (m *Metrics) queues(due, waiting, inFlight int) {
	if m == nil {
		return
	}
	m.due.Set(float64(due))
	m.waiting.Set(float64(waiting))
	m.inFlight.Set(float64(inFlight))
	m.activity.queues(due, waiting, inFlight)
}

// MetricsServer serves a registry's metrics over HTTP at /metrics.
type MetricsServer struct {
	srv   *http.Server
	addr  net.Addr
	done  chan error
	once  sync.Once
	error error
}

// ServeMetrics listens on addr ("127.0.0.1:9464"; port 0 picks one: see
// Addr) and serves reg at /metrics until Close.
func ServeMetrics(addr string, reg *prometheus.Registry, log *slog.Logger) (*MetricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	s := &MetricsServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr(),
		done: make(chan error, 1),
	}
	go func() { s.done <- s.srv.Serve(ln) }()
	if log != nil {
		log.Info("serving metrics", "url", "http://"+s.addr.String()+"/metrics")
	}
	return s, nil
}

// Addr is the address the server listens on.
func (s *MetricsServer) Addr() net.Addr { return s.addr }

// Close stops the server, letting a scrape in progress finish for at most
// two seconds (a stopping crawl must exit promptly).
func (s *MetricsServer) Close() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := s.srv.Shutdown(ctx)
		if errors.Is(err, context.DeadlineExceeded) {
			err = s.srv.Close()
		}
		if serr := <-s.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		s.error = err
	})
	return s.error
}
