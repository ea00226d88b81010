package fleettest

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/fleet"
)

type handler struct {
	started, stopped []int
}

func (h *handler) Start(_ context.Context, g fleet.Grant) error {
	h.started = append(h.started, g.Shard)
	return nil
}

func (h *handler) Ready(int, map[string]time.Time) {}

func (h *handler) Stop(s int, lost bool) time.Time {
	h.stopped = append(h.stopped, s)
	return time.Time{}
}

func (h *handler) Export(_ context.Context, r fleet.ExportRequest, f fleet.Fence) (fleet.Part, error) {
	return fleet.Part{URI: r.ID}, f.Check()
}

// The fake answers as a node does: not owner, takeover wait, deadline,
// fences of old holdings, and the shared IP pace.
func TestFake(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC))
	f := New(clock, 10*time.Millisecond)
	h := &handler{}
	ctx := context.Background()
	if err := f.MaySend(3); !errors.Is(err, fleet.ErrNotOwner) {
		t.Errorf("before a grant: %v", err)
	}
	g, err := f.Grant(ctx, h, 3, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.MaySend(3); !errors.Is(err, fleet.ErrTakeoverWait) {
		t.Errorf("inside the wait: %v", err)
	}
	clock.Advance(time.Minute)
	if err := f.MaySend(3); err != nil {
		t.Errorf("after the wait: %v", err)
	}
	if err := f.PutShardState(ctx, g.Fence, fleet.ShardState{Backup: "b"}); err != nil {
		t.Fatal(err)
	}
	f.SetDeadlinePassed(true)
	if err := f.MaySend(3); !errors.Is(err, fleet.ErrDeadline) || g.Fence.Check() == nil {
		t.Errorf("past the deadline: %v, fence %v", err, g.Fence.Check())
	}
	f.SetDeadlinePassed(false)
	f.Take(h, 3, true)
	g2, _ := f.Grant(ctx, h, 3, 0)
	if g2.Token <= g.Token || g2.Previous == nil || g2.Previous.Backup != "b" || g.Fence.Check() == nil || g2.Fence.Check() != nil {
		t.Errorf("second grant %+v; old fence %v", g2, g.Fence.Check())
	}
	if p, err := f.Export(ctx, h, fleet.ExportRequest{ID: "x"}, 3); err != nil || p.URI != "x" {
		t.Errorf("export %v %v", p, err)
	}
	ip := netip.MustParseAddr("192.0.2.1")
	s1, _ := f.ReserveIP(ctx, ip, time.Second)
	s2, _ := f.ReserveIP(ctx, netip.MustParseAddr("::ffff:192.0.2.1"), time.Second)
	if s2.Sub(s1) != time.Second+10*time.Millisecond {
		t.Errorf("pace starts %v apart", s2.Sub(s1))
	}
	if len(h.started) != 2 || len(h.stopped) != 1 {
		t.Errorf("handler calls: %v started, %v stopped", h.started, h.stopped)
	}
}
