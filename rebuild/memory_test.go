package rebuild

import (
	"runtime/debug"
	"testing"

	"github.com/mapthenet/mapthenet/internal/gctarget"
)

// A rebuild collects at rebuildGCPercent and restores the target it
// found; GOGC or GOMEMLIMIT in the environment leave the target alone.
func TestBoundGC(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	restore := boundGC()
	if got := gctarget.Percent(); got != rebuildGCPercent {
		t.Errorf("during the rebuild the target is %d, want %d", got, rebuildGCPercent)
	}
	restore()
	if got := gctarget.Percent(); got != 100 {
		t.Errorf("after the rebuild the target is %d, want 100 back", got)
	}
	t.Setenv("GOGC", "200")
	restore = boundGC()
	if got := gctarget.Percent(); got != 100 {
		t.Errorf("with GOGC set the rebuild changed the target to %d", got)
	}
	restore()
}
