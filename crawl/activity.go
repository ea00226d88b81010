package crawl

import (
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/data"
)

// Activity keeps what a running crawl did in its last hour, in one-minute
// buckets, for `mapthenet status` (over crawl.sock) and the crawl's
// once-a-minute log line. The Metrics feed it; it is safe for concurrent
// use. Memory is fixed: 60 buckets.
type Activity struct {
	mu      sync.Mutex
	clock   clockwork.Clock
	started time.Time
	buckets [60]activityBucket
	totals  activityBucket
	due     int
	waiting int
	flight  int
}

type activityBucket struct {
	minute   int64 // Unix minute the bucket holds; stale when older than an hour
	visits   int
	pages    int
	bytes    int64
	outcomes map[data.Outcome]int
}

func (b *activityBucket) add(r *data.VisitResult) {
	b.visits++
	b.pages += r.Pages
	b.bytes += r.Bytes
	if b.outcomes == nil {
		b.outcomes = map[data.Outcome]int{}
	}
	b.outcomes[r.Outcome]++
}

// NewActivity starts an empty record at the clock's now.
func NewActivity(clock clockwork.Clock) *Activity {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	return &Activity{clock: clock, started: clock.Now()}
}

// setClock points the record at the crawl's clock (tests give a fake one).
func (a *Activity) setClock(c clockwork.Clock) {
	if a == nil || c == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.clock = c
	a.started = c.Now()
}

// Add records one finished visit (the crawl's Metrics call it).
func (a *Activity) Add(r *data.VisitResult) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	m := a.clock.Now().Unix() / 60
	b := &a.buckets[m%60]
	if b.minute != m {
		*b = activityBucket{minute: m}
	}
	b.add(r)
	a.totals.add(r)
}

func (a *Activity) queues(due, waiting, inFlight int) {
	if a == nil {
		return
	}
	a.mu.Lock()
	a.due, a.waiting, a.flight = due, waiting, inFlight
	a.mu.Unlock()
}

// ActivityReport is what a running crawl says of itself (`mapthenet status
// --json`, "crawl" object).
type ActivityReport struct {
	StartedAt        time.Time      `json:"started_at"`
	UptimeSeconds    float64        `json:"uptime_s"`
	SitesInFlight    int            `json:"sites_in_flight"`
	Due              int            `json:"due"`     // of the schedule, due and not yet taken this run
	Waiting          int            `json:"waiting"` // seeds and found domains in line for a first visit
	PagesPerSecMin   float64        `json:"pages_per_s_last_minute"`
	PagesPerSecHour  float64        `json:"pages_per_s_last_hour"`
	VisitsLastHour   int            `json:"visits_last_hour"`
	OutcomesLastHour map[string]int `json:"outcomes_last_hour"`
	Visits           int            `json:"visits"` // since the crawl started
	Pages            int            `json:"pages"`
	Bytes            int64          `json:"bytes"`
}

// Report sums the last minute and the last hour. A rate over a window the
// crawl has not run for yet is over the time it has run.
func (a *Activity) Report() ActivityReport {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.clock.Now()
	up := now.Sub(a.started)
	r := ActivityReport{StartedAt: a.started.UTC(), UptimeSeconds: up.Seconds(), SitesInFlight: a.flight,
		Due: a.due, Waiting: a.waiting, OutcomesLastHour: map[string]int{},
		Visits: a.totals.visits, Pages: a.totals.pages, Bytes: a.totals.bytes}
	cur := now.Unix() / 60
	var lastMin, lastHour int
	for i := range a.buckets {
		b := &a.buckets[i]
		if b.minute <= cur-60 || b.minute > cur {
			continue
		}
		lastHour += b.pages
		r.VisitsLastHour += b.visits
		for o, n := range b.outcomes {
			r.OutcomesLastHour[string(o)] += n
		}
		if b.minute == cur {
			lastMin += b.pages
		}
	}
	// The current minute is partly gone: "the last minute" is the current
	// bucket over the seconds it covers (at least 1 s).
	minSpan := now.Sub(time.Unix(cur*60, 0)).Seconds()
	hourSpan := min(up.Seconds(), 3600)
	minSpan = min(max(minSpan, 1), max(up.Seconds(), 1))
	r.PagesPerSecMin = float64(lastMin) / minSpan
	r.PagesPerSecHour = float64(lastHour) / max(hourSpan, 1)
	return r
}
