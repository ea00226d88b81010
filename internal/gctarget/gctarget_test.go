package gctarget

import (
	"runtime/debug"
	"testing"
)

func percent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// Overlapping holds set their targets and restore the one from before the
// first only when the last ends, in any order; a release twice counts once;
// GOGC in the environment leaves the target alone.
func TestHold(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	a := Hold(50)
	if got := percent(); got != 50 {
		t.Errorf("held at 50: %d", got)
	}
	b := Hold(400)
	if got := percent(); got != 400 {
		t.Errorf("held at 400 as well: %d, want the last, 400", got)
	}
	a()
	a()
	if got := percent(); got == 100 {
		t.Errorf("one of two holds released (twice): the target is back at 100 already")
	}
	b()
	if got := percent(); got != 100 {
		t.Errorf("both released: %d, want 100 back", got)
	}
	t.Setenv("GOGC", "200")
	c := Hold(50)
	if got := percent(); got != 100 {
		t.Errorf("with GOGC set, a hold changed the target to %d", got)
	}
	c()
}
