package fleet

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are a crawl node's fleet metrics (names prefixed
// mapthenet_fleet_), registered in the registry given to NewMetrics (the
// crawl's, so that one /metrics serves both). A nil *Metrics counts
// nothing.
type Metrics struct {
	renewals *prometheus.CounterVec // by result
	sessions prometheus.Counter
	changes  *prometheus.CounterVec // shard acquired / released / lost
	pacing   *prometheus.CounterVec // IP pace reservations by result
	exports  *prometheus.CounterVec // by result
	node     atomic.Pointer[Node]   // the node the gauges read; nil: none
}

// NewMetrics makes the fleet metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		renewals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mapthenet_fleet_lease_renewals_total",
			Help: "Renewals of the node's fleet lease, by result (ok, failed).",
		}, []string{"result"}),
		sessions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mapthenet_fleet_sessions_total",
			Help: "Fleet leases taken: 1 at start, one more each time the node rejoined after losing its lease.",
		}),
		changes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mapthenet_fleet_shard_changes_total",
			Help: "Shard holdings that began (acquired) or ended (released cleanly, lost with the lease or owner key).",
		}, []string{"change"}),
		pacing: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mapthenet_fleet_ip_pace_total",
			Help: "Shared IP pace compare-and-swaps, by result: ok, retry (another node wrote first), error (no request sent).",
		}, []string{"result"}),
		exports: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mapthenet_fleet_exports_total",
			Help: "Shard exports for fleet rebuilds, by result: exported, failed, unanswered (the shard moved or etcd did not answer).",
		}, []string{"result"}),
	}
	gauge := func(name, help string, f func(n *Node) float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, func() float64 {
			if n := m.node.Load(); n != nil {
				return f(n)
			}
			return 0
		})
	}
	reg.MustRegister(m.renewals, m.sessions, m.changes, m.pacing, m.exports,
		gauge("mapthenet_fleet_lease_deadline_seconds",
			"Seconds until the node's lease deadline (last renewal + TTL − margin); requests stop when it is not positive.",
			func(n *Node) float64 {
				d := n.Deadline()
				if d.IsZero() {
					return 0
				}
				return n.clock.Until(d).Seconds()
			}),
		gauge("mapthenet_fleet_requests_allowed",
			"1 while the node's lease deadline has not passed (requests may go out), else 0.",
			func(n *Node) float64 {
				if d := n.Deadline(); !d.IsZero() && n.clock.Now().Before(d) {
					return 1
				}
				return 0
			}),
		gauge("mapthenet_fleet_shards_owned", "Shards this node holds.",
			func(n *Node) float64 { return float64(len(n.Owned())) }),
		gauge("mapthenet_fleet_shards_ready", "Shards this node may send requests for now (held, started, past the takeover wait, lease deadline not passed).",
			func(n *Node) float64 {
				c := 0
				for _, o := range n.Owned() {
					if o.Ready {
						c++
					}
				}
				return float64(c)
			}),
	)
	for _, r := range []string{"ok", "failed"} {
		m.renewals.WithLabelValues(r)
	}
	for _, c := range []string{"acquired", "released", "lost"} {
		m.changes.WithLabelValues(c)
	}
	for _, r := range []string{"ok", "retry", "error"} {
		m.pacing.WithLabelValues(r)
	}
	for _, r := range []string{AnswerExported, AnswerFailed, "unanswered"} {
		m.exports.WithLabelValues(r)
	}
	return m
}

func (m *Metrics) watch(n *Node) {
	if m != nil {
		m.node.Store(n)
	}
}

func (m *Metrics) renewal(ok bool) {
	if m == nil {
		return
	}
	if ok {
		m.renewals.WithLabelValues("ok").Inc()
	} else {
		m.renewals.WithLabelValues("failed").Inc()
	}
}

func (m *Metrics) sessionStarted() {
	if m != nil {
		m.sessions.Inc()
	}
}

func (m *Metrics) shardChange(change string) {
	if m != nil {
		m.changes.WithLabelValues(change).Inc()
	}
}

func (m *Metrics) pace(result string) {
	if m != nil {
		m.pacing.WithLabelValues(result).Inc()
	}
}

func (m *Metrics) export(result string) {
	if m != nil {
		m.exports.WithLabelValues(result).Inc()
	}
}
