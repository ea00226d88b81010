package crawl

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/data"
)

func TestActivityReport(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	fc := clockwork.NewFakeClockAt(t0)
	a := NewActivity(fc)
	visit := func(o data.Outcome, pages int) { a.Add(&data.VisitResult{Outcome: o, Pages: pages, Bytes: 100}) }

	visit(data.OutcomeOK, 10) // 10:00
	fc.Advance(30 * time.Minute)
	visit(data.OutcomeOK, 20)       // 10:30
	visit(data.OutcomeThrottled, 1) // 10:30
	fc.Advance(40 * time.Minute)    // 11:10: the 10:00 bucket is over an hour old
	visit(data.OutcomeTimeout, 0)   // 11:10
	fc.Advance(10 * time.Second)    // 11:10:10
	a.queues(3, 7, 2)

	r := a.Report()
	if r.Visits != 4 || r.Pages != 31 || r.Bytes != 400 {
		t.Errorf("totals %d visits %d pages %d bytes", r.Visits, r.Pages, r.Bytes)
	}
	if r.VisitsLastHour != 3 {
		t.Errorf("visits last hour %d, want 3 (10:30 twice, 11:10)", r.VisitsLastHour)
	}
	want := map[string]int{"ok": 1, "throttled": 1, "timeout": 1}
	if len(r.OutcomesLastHour) != len(want) {
		t.Errorf("outcomes %v, want %v", r.OutcomesLastHour, want)
	}
	for o, n := range want {
		if r.OutcomesLastHour[o] != n {
			t.Errorf("outcomes %v, want %v", r.OutcomesLastHour, want)
		}
	}
	if r.PagesPerSecHour != 21.0/3600 {
		t.Errorf("pages/s last hour %v, want %v", r.PagesPerSecHour, 21.0/3600)
	}
	if r.PagesPerSecMin != 0 {
		t.Errorf("pages/s last minute %v, want 0", r.PagesPerSecMin)
	}
	if r.SitesInFlight != 2 || r.Due != 3 || r.Waiting != 7 {
		t.Errorf("queues %+v", r)
	}
	if r.UptimeSeconds != (70*time.Minute + 10*time.Second).Seconds() {
		t.Errorf("uptime %v", r.UptimeSeconds)
	}
}

// Not on a terminal, the crawl logs its counts once per LogEvery.
func TestActivityLogLine(t *testing.T) {
	fc := clockwork.NewFakeClock()
	lines := make(chan []byte, 1)
	log := slog.New(slog.NewJSONHandler(lineWriter(lines), nil))
	a := NewActivity(fc)
	a.Add(&data.VisitResult{Outcome: data.OutcomeOK, Pages: 5})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { logActivity(ctx, fc, time.Minute, log, a); close(done) }()
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fc.Advance(time.Minute)
	line := <-lines
	cancel()
	<-done
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	if m["msg"] != "crawl progress" || m["visits"] != float64(1) || m["pages"] != float64(5) {
		t.Errorf("line %v", m)
	}
}

// lineWriter hands each write (slog writes a line at a time) to a channel.
type lineWriter chan []byte

func (w lineWriter) Write(p []byte) (int, error) {
	w <- bytes.Clone(p)
	return len(p), nil
}
