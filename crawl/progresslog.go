package crawl

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// startActivityLog runs logActivity until the returned stop is called.
func startActivityLog(ctx context.Context, o Options) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		logActivity(ctx, o.Clock, o.LogEvery, o.Logger, o.Metrics.Activity())
	}()
	return func() { cancel(); wg.Wait() }
}

// logActivity writes one "crawl progress" line every interval until ctx
// ends: the counts a terminal sees, for a crawl whose stderr is a log file
// (cron, systemd). It runs in its own goroutine and reads only the
// Activity, so the crawl's loop does not wait on it.
func logActivity(ctx context.Context, clock clockwork.Clock, every time.Duration, log *slog.Logger, a *Activity) {
	t := clock.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.Chan():
			r := a.Report()
			log.Info("crawl progress", "visits", r.Visits, "pages", r.Pages, "sites_in_flight", r.SitesInFlight,
				"due", r.Due, "waiting", r.Waiting, "pages_per_s", round2(r.PagesPerSecMin),
				"visits_last_hour", r.VisitsLastHour)
		}
	}
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
