// Package pace spaces the crawler's requests: one request at a time per key
// (a site, a shared platform, an IP address) and request starts at least a
// gap apart on each key. A request names every key it must respect and takes
// them all at once, so two requests can never hold each other's keys
// half-way (no deadlock) and a waiting request holds nothing.
//
// Time comes from a clockwork.Clock so that tests advance a fake clock
// instead of sleeping.
package pace

import (
	"context"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
)

// Key is one pace a request must respect: Name identifies the shared
// resource ("site:example.com", "platform:neocities.org", "ip:192.0.2.1");
// Gap is the least time between the previous request on that key and the
// start of this one. It is counted from the moment the previous request
// was released (its response read), not from its start: the server sees
// a request arrive some time after we start it (a connection to open, a
// TLS handshake), so only a gap counted from the previous response's end
// guarantees the server itself sees starts at least Gap apart. Requests on one key may ask for different
// gaps (the site's gap grows once robots.txt gives a Crawl-delay); each
// request's own gap applies to it.
type Key struct {
	Name string
	Gap  time.Duration
}

// Pacer hands out turns. The zero value is not usable: call New.
type Pacer struct {
	clock clockwork.Clock

	mu    sync.Mutex
	slots map[string]*slot
	// sweepAt: when the map has grown to this size, forget idle slots whose
	// gap has surely passed, so memory follows the number of active keys,
	// not of every site ever seen.
	sweepAt int
}

type slot struct {
	busy bool
	last time.Time // end (release) of the latest request
	// maxGap is the largest gap ever asked on this slot: after last+maxGap
	// the slot is indistinguishable from a fresh one and may be forgotten.
	maxGap time.Duration
	// wake is closed when the slot stops being busy; nil when no one waits.
	wake chan struct{}
}

// New returns a Pacer on the given clock (nil: the real clock).
func New(clock clockwork.Clock) *Pacer {
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	return &Pacer{clock: clock, slots: map[string]*slot{}, sweepAt: 1024}
}

// Acquire waits until every key is free and its gap has passed since the
// previous release, then takes them all. Call release when the
// request (its whole response) is done. Duplicate names are allowed: the
// largest gap among them applies.
func (p *Pacer) Acquire(ctx context.Context, keys ...Key) (release func(), err error) {
	keys = dedupe(keys)
	for {
		p.mu.Lock()
		now := p.clock.Now()
		var wait <-chan struct{}
		var until time.Time
		for _, k := range keys {
			s := p.slots[k.Name]
			if s == nil {
				continue
			}
			if s.busy {
				if s.wake == nil {
					s.wake = make(chan struct{})
				}
				wait = s.wake
				break
			}
			if t := s.last.Add(k.Gap); t.After(now) && t.After(until) {
				until = t
			}
		}
		if wait == nil && until.IsZero() {
			for _, k := range keys {
				s := p.slots[k.Name]
				if s == nil {
					s = &slot{}
					p.slots[k.Name] = s
				}
				s.busy = true
				s.last = now
				s.maxGap = max(s.maxGap, k.Gap)
			}
			p.maybeSweep(now)
			p.mu.Unlock()
			return p.releaser(keys), nil
		}
		p.mu.Unlock()

		if wait != nil {
			select {
			case <-wait:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			continue
		}
		t := p.clock.NewTimer(until.Sub(now))
		select {
		case <-t.Chan():
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

func (p *Pacer) releaser(keys []Key) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			now := p.clock.Now()
			for _, k := range keys {
				s := p.slots[k.Name]
				s.busy = false
				s.last = now
				if s.wake != nil {
					close(s.wake)
					s.wake = nil
				}
			}
		})
	}
}

// maybeSweep forgets idle slots whose every gap has passed. Called with mu held.
func (p *Pacer) maybeSweep(now time.Time) {
	if len(p.slots) < p.sweepAt {
		return
	}
	for name, s := range p.slots {
		if !s.busy && s.wake == nil && !now.Before(s.last.Add(s.maxGap)) {
			delete(p.slots, name)
		}
	}
	p.sweepAt = max(1024, 2*len(p.slots))
}

// Len is the number of keys currently remembered (for tests and metrics).
func (p *Pacer) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.slots)
}

func dedupe(keys []Key) []Key {
	out := keys[:0:0]
	for _, k := range keys {
		found := false
		for i := range out {
			if out[i].Name == k.Name {
				out[i].Gap = max(out[i].Gap, k.Gap)
				found = true
			}
		}
		if !found {
			out = append(out, k)
		}
	}
	return out
}
