package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

type loopbackResolver struct{}

func (loopbackResolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
}

// TestRemoveWhileCrawling: with a crawl running (it holds the store and
// answers on crawl.sock, as `mapthenet crawl` does), remove force and
// remove verify are done by that crawl: the domain leaves the store and
// every kept snapshot, and the crawl, which finds a link to it after the
// removal, never visits it.
func TestRemoveWhileCrawling(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fillStore(t, dir)
	for _, now := range []string{"2026-11-30T03:00:00Z", "2026-12-01T03:00:00Z"} {
		if code, _, errOut := runIn(t, dir, "rebuild", "--now", now, "--tiers", testTiersFlag, "--workers", "1"); code != 0 {
			t.Fatalf("rebuild: %d %s", code, errOut)
		}
	}
	// b.example and d.example are in both snapshots, with edges both ways.
	for _, d := range []string{"b.example", "d.example"} {
		if n := snapshotMentions(t, dir, d); n == 0 {
			t.Fatalf("%s is in no snapshot before its removal", d)
		}
	}

	// The loopback web: later.example links to b.example and d.example, but
	// only once both are removed (its home page waits for that).
	removed := make(chan struct{})
	var mu sync.Mutex
	var hosts []string
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hosts = append(hosts, r.Host)
		mu.Unlock()
		if r.URL.Path != "/" {
			http.NotFound(rw, r)
			return
		}
		<-removed
		rw.Header().Set("Content-Type", "text/html")
		fmt.Fprint(rw, `<a href="https://b.example/">b</a> <a href="https://www.d.example/">d</a> <a href="https://new.example/">n</a>`)
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())

	store, err := graph.Open(filepath.Join(dir, "store"), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctl, err := serveControl(shard.One(store), dir, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte("later.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	crawled := make(chan error, 1)
	var stats crawl.Stats
	go func() {
		var err error
		stats, err = crawl.Run(ctx, store, crawl.Options{
			MinDelaySet: true, ConnectTo: []fetch.ConnectTo{{ToHost: "127.0.0.1", ToPort: port}}, Resolver: loopbackResolver{},
			Sign: func(*http.Request) error { return nil }, Seeds: []string{seeds}, UntilIdle: true,
			ResponseTimeout: 10 * time.Second, Logger: slog.New(slog.DiscardHandler),
		})
		crawled <- err
	}()

	code, out, errOut := runIn(t, dir, "remove", "force", "b.example", "--reason", "e-mail from the registrant", "--now", "2026-12-02T10:00:00Z")
	if code != 0 || !strings.Contains(out, "b.example removed (forced: e-mail from the registrant)") {
		t.Fatalf("remove force while crawling: %d\n%s%s", code, out, errOut)
	}
	_, out, _ = runIn(t, dir, "remove", "token", "d.example")
	tok := tokenLine.FindStringSubmatch(out)[2]
	chk := fakeChecker(txtFake{"d.example": {"mapthenet-verification=" + tok}}, &notFound{})
	code, out, errOut = runWith(t, chk, dir, "remove", "verify", "d.example", "--now", "2026-12-02T10:05:00Z")
	if code != 0 || !strings.Contains(out, "d.example removed (proof: dns:") {
		t.Fatalf("remove verify while crawling: %d\n%s%s", code, out, errOut)
	}
	close(removed)
	if err := <-crawled; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	for _, h := range hosts {
		if strings.HasSuffix(h, "b.example") || strings.HasSuffix(h, "d.example") {
			t.Errorf("the crawl visited %s after its removal", h)
		}
	}
	mu.Unlock()
	if stats.Outcomes[data.OutcomeOK] < 2 { // later.example, new.example
		t.Errorf("crawl stats %+v", stats)
	}
	for _, d := range []string{"b.example", "d.example"} {
		if gone, err := store.IsRemoved(d); err != nil || !gone {
			t.Errorf("%s not removed from the store: %v", d, err)
		}
		if n := snapshotMentions(t, dir, d); n != 0 {
			t.Errorf("%s still in %d rows of the kept snapshots", d, n)
		}
	}
	if st, ok, _ := store.Domain("later.example"); !ok || !st.Visited() {
		t.Errorf("later.example not crawled: %+v", st)
	}
}

// snapshotMentions counts the rows naming domain in every kept snapshot.
func snapshotMentions(t *testing.T, dir, domain string) int {
	t.Helper()
	ids, err := snapshot.Local(dir).List()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, id := range ids {
		snap, err := snapshot.Open(dir, id)
		if err != nil {
			t.Fatal(err)
		}
		domains, _ := snap.Domains()
		for _, r := range domains {
			if r.Domain == domain {
				n++
			}
		}
		edges, _ := snap.Edges()
		for _, r := range edges {
			if r.Src == domain || r.Dst == domain {
				n++
			}
		}
		words, _ := snap.LinkWords()
		for _, r := range words {
			if r.Domain == domain {
				n++
			}
		}
		visits, _ := snap.Visits()
		for _, r := range visits {
			if r.Domain == domain {
				n++
			}
		}
		sched, _ := snap.Schedule()
		for _, r := range sched {
			if r.Domain == domain {
				n++
			}
		}
	}
	return n
}
