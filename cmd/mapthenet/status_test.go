package main

import (
	"encoding/json"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
)

// With nothing in the data dir, status says so and succeeds.
func TestStatusEmpty(t *testing.T) {
	t.Parallel()
	code, out, errOut := runIn(t, t.TempDir(), "status", "--now", "2026-12-01T03:00:00Z")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"crawl: not running", "store: none at", "snapshot: none yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// From the store and snapshot alone, then from a running crawl's socket.
func TestStatusSnapshotAndCrawl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fillStore(t, dir)
	if code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z", "--tiers", testTiersFlag, "--workers", "1"); code != 0 {
		t.Fatalf("rebuild: exit %d: %s", code, errOut)
	}
	// The schedule golden (testdata/rank/schedule.txt) has 3 rows due at
	// 03:00 and the rest 16 days and more later.
	code, out, errOut := runIn(t, dir, "status", "--json", "--now", "2026-12-01T03:00:00Z")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var st statusReport
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	s := st.Snapshot
	if st.Crawl != nil || !st.Store.Exists || st.Store.Bytes == 0 || s == nil {
		t.Fatalf("status %s", out)
	}
	if s.ID != "2026-12-01T030000Z" || s.Domains != 8 || s.Scheduled != 7 || s.DueNow != 3 || s.DueNextHour != 0 || s.DueNextDay != 0 || s.NeverVisited != 2 {
		t.Errorf("snapshot status %+v", s)
	}
	if s.NextDue == nil || !s.NextDue.Equal(time.Date(2026, 12, 17, 3, 0, 0, 0, time.UTC)) {
		t.Errorf("next due %v", s.NextDue)
	}

	// A crawl holding the store answers on crawl.sock.
	store, err := graph.Open(filepath.Join(dir, "store"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	fc := clockwork.NewFakeClockAt(time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC))
	act := crawl.NewActivity(fc)
	fc.Advance(90 * time.Second)
	srv, err := serveControl(shard.One(store), dir, slog.New(slog.DiscardHandler), feedActivity(act))
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, out, errOut = runIn(t, dir, "status", "--now", "2026-12-01T03:00:00Z")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"crawl: running since 2026-12-01 03:00:00Z (1m30s)", "last hour: 3 visits: ok 2, throttled 1", "3 due now"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}

// feedActivity records three visits, as a crawl's metrics would.
func feedActivity(a *crawl.Activity) *crawl.Activity {
	for _, o := range []data.Outcome{data.OutcomeOK, data.OutcomeOK, data.OutcomeThrottled} {
		a.Add(&data.VisitResult{Outcome: o, Pages: 3})
	}
	return a
}

// A socket that answers, but not as our crawl, is an error (exit 1), not
// "not running".
func TestStatusForeignSocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, control.SocketName))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("220 smtp.example ESMTP\n"))
			c.Close()
		}
	}()
	code, _, errOut := runIn(t, dir, "status")
	if code != 1 || !strings.Contains(errOut, "does not answer as a mapthenet crawl") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}
