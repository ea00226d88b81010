package fleet

import (
	"testing"
	"time"
)

func TestTimingDefaultsAndCheck(t *testing.T) {
	d := Timing{}.withDefaults()
	if d.TTL != 10*time.Second || d.Margin != 2*time.Second || d.ResponseTimeout != 30*time.Second || d.ClockSkew != 250*time.Millisecond {
		t.Errorf("defaults %+v", d)
	}
	if err := d.check(); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
	if got, want := d.TakeoverWait(), 40250*time.Millisecond; got != want {
		t.Errorf("TakeoverWait = %v, want %v", got, want)
	}
	for _, bad := range []Timing{
		{TTL: time.Second},
		{TTL: 2500 * time.Millisecond},
		{TTL: 10 * time.Second, Margin: 5 * time.Second}, // deadline would pass between renewals
		{TTL: 10 * time.Second, Margin: -time.Second},
	} {
		if err := bad.withDefaults().check(); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if err := fastTiming().withDefaults().check(); err != nil {
		t.Errorf("test timing refused: %v", err)
	}
}

// The deadline is counted from when a renewal was sent, with the TTL the
// server granted, less the margin; without a lease there is none.
func TestLeaseDeadline(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	l := leaseView{id: 7, sentAt: t0, ttl: 10 * time.Second}
	margin := 2 * time.Second
	tests := []struct {
		at    time.Duration
		valid bool
	}{{0, true}, {7999 * time.Millisecond, true}, {8 * time.Second, false}, {9 * time.Second, false}, {-time.Second, true}}
	for _, tt := range tests {
		if got := l.valid(t0.Add(tt.at), margin); got != tt.valid {
			t.Errorf("valid at +%v = %v, want %v", tt.at, got, tt.valid)
		}
	}
	if got := l.deadline(margin); !got.Equal(t0.Add(8 * time.Second)) {
		t.Errorf("deadline %v", got)
	}
	// The server may grant a longer TTL than asked (its minimum): the
	// granted one counts.
	l.ttl = 15 * time.Second
	if !l.valid(t0.Add(12*time.Second), margin) {
		t.Error("granted TTL ignored")
	}
	none := leaseView{}
	if none.valid(t0, margin) || !none.deadline(margin).IsZero() {
		t.Error("no lease is valid")
	}
}
