package gctarget

import (
	"math"
	"runtime/debug"
	"testing"
)

// Overlapping holds set their targets and restore the one from before the
// first only when the last ends, in any order; a release twice counts once;
// GOGC in the environment leaves the target alone.
func TestHold(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	a := Hold(50)
	if got := Percent(); got != 50 {
		t.Errorf("held at 50: %d", got)
	}
	b := Hold(400)
	if got := Percent(); got != 400 {
		t.Errorf("held at 400 as well: %d, want the last, 400", got)
	}
	a()
	a()
	if got := Percent(); got == 100 {
		t.Errorf("one of two holds released (twice): the target is back at 100 already")
	}
	b()
	if got := Percent(); got != 100 {
		t.Errorf("both released: %d, want 100 back", got)
	}
	t.Setenv("GOGC", "200")
	c := Hold(50)
	if got := Percent(); got != 100 {
		t.Errorf("with GOGC set, a hold changed the target to %d", got)
	}
	c()
}

func limit() int64 { return debug.SetMemoryLimit(-1) }

// Overlapping limit holds run the process under the least of them; a hold
// that changes or ends lets the others' least apply; the limit from before
// the first comes back when the last ends, in any order; a release twice
// counts once; GOMEMLIMIT or GOGC in the environment leaves the limit alone.
func TestHoldLimit(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	const mib = 1 << 20
	crawl := HoldLimit(768 * mib)
	if got := limit(); got != 768*mib {
		t.Fatalf("one hold of 768 MiB: limit %d MiB", got/mib)
	}
	rank := HoldLimit(2560 * mib)
	if got := limit(); got != 768*mib {
		t.Errorf("holds of 768 and 2560 MiB: limit %d MiB, want the least", got/mib)
	}
	crawl.Set(4096 * mib)
	if got := limit(); got != 2560*mib {
		t.Errorf("holds of 4096 and 2560 MiB: limit %d MiB, want 2560", got/mib)
	}
	crawl.Release()
	crawl.Release()
	crawl.Set(100 * mib) // released: nothing
	if got := limit(); got != 2560*mib {
		t.Errorf("the crawl's hold released (twice, then set): limit %d MiB, want the rank's 2560", got/mib)
	}
	rank.Release()
	if got := limit(); got != math.MaxInt64 {
		t.Errorf("every hold released: limit %d, want none, as before", got)
	}

	// A limit set before the first hold is a bound the holds stay under,
	// and comes back after.
	debug.SetMemoryLimit(1000 * mib)
	h := HoldLimit(2560 * mib)
	if got := limit(); got != 1000*mib {
		t.Errorf("a hold of 2560 MiB under a limit of 1000: limit %d MiB", got/mib)
	}
	h.Release()
	if got := limit(); got != 1000*mib {
		t.Errorf("after the hold: limit %d MiB, want the 1000 from before", got/mib)
	}

	t.Setenv("GOMEMLIMIT", "3GiB")
	op := HoldLimit(10 * mib)
	op.Set(20 * mib)
	if got := limit(); got != 1000*mib {
		t.Errorf("GOMEMLIMIT set: a hold changed the limit to %d MiB", got/mib)
	}
	op.Release()
}
