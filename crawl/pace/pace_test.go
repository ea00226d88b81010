package pace

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
)

var t0 = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

// acquireAsync starts Acquire in a goroutine and returns a channel that
// yields the fake time at which the turn was granted, and its release.
type grant struct {
	at      time.Time
	release func()
}

func acquireAsync(t *testing.T, ctx context.Context, p *Pacer, fc *clockwork.FakeClock, keys ...Key) <-chan grant {
	t.Helper()
	ch := make(chan grant, 1)
	go func() {
		rel, err := p.Acquire(ctx, keys...)
		if err != nil {
			close(ch)
			return
		}
		ch <- grant{fc.Now(), rel}
	}()
	return ch
}

func mustAcquire(t *testing.T, p *Pacer, keys ...Key) func() {
	t.Helper()
	rel, err := p.Acquire(context.Background(), keys...)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

func notYet(t *testing.T, ch <-chan grant) {
	t.Helper()
	select {
	case g := <-ch:
		t.Fatalf("granted at %v, want still waiting", g.at)
	default:
	}
}

func TestGapBetweenStarts(t *testing.T) {
	ctx := t.Context()
	fc := clockwork.NewFakeClockAt(t0)
	p := New(fc)
	site := Key{"site:example.com", time.Second}
	mustAcquire(t, p, site)()

	ch := acquireAsync(t, ctx, p, fc, site)
	if err := fc.BlockUntilContext(ctx, 1); err != nil { // waiting on its timer
		t.Fatal(err)
	}
	notYet(t, ch)
	fc.Advance(999 * time.Millisecond)
	notYet(t, ch)
	fc.Advance(time.Millisecond)
	g := <-ch
	g.release()
	if got := g.at.Sub(t0); got != time.Second {
		t.Fatalf("second start %v after the first, want 1s", got)
	}
}

func TestOneAtATime(t *testing.T) {
	ctx := t.Context()
	fc := clockwork.NewFakeClockAt(t0)
	p := New(fc)
	site := Key{"site:example.com", 0}
	rel := mustAcquire(t, p, site)
	ch := acquireAsync(t, ctx, p, fc, site)
	// No timer is involved: the second waits for the release, whatever the clock says.
	fc.Advance(time.Hour)
	notYet(t, ch)
	rel()
	g := <-ch
	g.release()
}

func TestDifferentSitesDoNotWait(t *testing.T) {
	fc := clockwork.NewFakeClockAt(t0)
	p := New(fc)
	a := mustAcquire(t, p, Key{"site:a.com", time.Minute})
	b := mustAcquire(t, p, Key{"site:b.com", time.Minute}) // would block forever if shared
	a()
	b()
}

func TestSharedPlatformAndIP(t *testing.T) {
	for _, shared := range []Key{
		{"platform:neocities.org", 2 * time.Second},
		{"ip:192.0.2.1", 2 * time.Second},
	} {
		t.Run(shared.Name, func(t *testing.T) {
			ctx := t.Context()
			fc := clockwork.NewFakeClockAt(t0)
			p := New(fc)
			mustAcquire(t, p, Key{"site:alice.neocities.org", time.Second}, shared)()
			ch := acquireAsync(t, ctx, p, fc, Key{"site:bob.neocities.org", time.Second}, shared)
			if err := fc.BlockUntilContext(ctx, 1); err != nil {
				t.Fatal(err)
			}
			fc.Advance(time.Second) // bob's own gap is nothing to him; the shared 2 s is
			notYet(t, ch)
			fc.Advance(time.Second)
			g := <-ch
			g.release()
			if got := g.at.Sub(t0); got != 2*time.Second {
				t.Fatalf("bob started %v after alice, want 2s", got)
			}
		})
	}
}

func TestCrawlDelayRaisesTheGap(t *testing.T) {
	ctx := t.Context()
	fc := clockwork.NewFakeClockAt(t0)
	p := New(fc)
	// robots.txt is read at the minimum delay; it says Crawl-delay: 10.
	mustAcquire(t, p, Key{"site:example.com", time.Second})()
	ch := acquireAsync(t, ctx, p, fc, Key{"site:example.com", 10 * time.Second})
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fc.Advance(9 * time.Second)
	notYet(t, ch)
	fc.Advance(time.Second)
	g := <-ch
	g.release()
	if got := g.at.Sub(t0); got != 10*time.Second {
		t.Fatalf("got %v, want 10s", got)
	}
}

func TestAllKeysTakenTogether(t *testing.T) {
	ctx := t.Context()
	fc := clockwork.NewFakeClockAt(t0)
	p := New(fc)
	relIP := mustAcquire(t, p, Key{"ip:192.0.2.1", 0})
	// Waiting for the IP must not hold the site: another request of the
	// site on another IP goes ahead.
	ch := acquireAsync(t, ctx, p, fc, Key{"site:a.com", 0}, Key{"ip:192.0.2.1", 0})
	for p.waiting() == 0 {
		// the goroutine registers as a waiter under the lock; yield until it has
		runtimeGosched()
	}
	mustAcquire(t, p, Key{"site:a.com", 0}, Key{"ip:192.0.2.2", 0})()
	relIP()
	g := <-ch
	g.release()
}

func TestCancelWhileWaiting(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	fc := clockwork.NewFakeClockAt(t0)
	p := New(fc)
	rel := mustAcquire(t, p, Key{"site:a.com", time.Hour})
	ch := acquireAsync(t, ctx, p, fc, Key{"site:a.com", time.Hour})
	cancel()
	if _, ok := <-ch; ok {
		t.Fatal("granted after cancel")
	}
	rel()
}

func TestSweepForgetsIdleKeys(t *testing.T) {
	fc := clockwork.NewFakeClockAt(t0)
	p := New(fc)
	for i := range 5000 {
		mustAcquire(t, p, Key{Name: "site:" + string(rune('a'+i%26)) + itoa(i), Gap: time.Second})()
		if i%100 == 0 {
			fc.Advance(2 * time.Second)
		}
	}
	if n := p.Len(); n > 2048 {
		t.Fatalf("pacer remembers %d keys, want idle ones forgotten", n)
	}
}

func TestGapCountsFromTheEnd(t *testing.T) {
	ctx := t.Context()
	fc := clockwork.NewFakeClockAt(t0)
	p := New(fc)
	site := Key{"site:example.com", time.Second}
	rel := mustAcquire(t, p, site)
	fc.Advance(3 * time.Second) // a slow response
	rel()
	ch := acquireAsync(t, ctx, p, fc, site)
	if err := fc.BlockUntilContext(ctx, 1); err != nil {
		t.Fatal(err)
	}
	fc.Advance(time.Second)
	g := <-ch
	g.release()
	if got := g.at.Sub(t0); got != 4*time.Second {
		t.Fatalf("started %v after the first start, want 4s (1s after its end)", got)
	}
}
