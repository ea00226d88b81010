package rebuild

import (
	"context"
	"errors"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

func TestShrinkGuard(t *testing.T) {
	half := func() *fakeSource { // 3 of 8 domains, 2 of 10 edges
		s := smallGraph()
		s.domains = s.domains[:3]
		s.edges = s.edges[:2]
		s.visits = nil
		return s
	}
	cases := []struct {
		name      string
		next      *fakeSource
		maxShrink float64
		accept    bool
		guarded   bool
	}{
		{"same size", smallGraph(), 0, false, false},
		{"more than half gone", half(), 0, false, true},
		{"within a wider guard", half(), 0.9, false, false},
		{"guard off", half(), -1, false, false},
		{"accepted", half(), 0, true, false},
		{"empty", &fakeSource{}, 0, false, true},
		{"empty, guard off", &fakeSource{}, -1, false, true},
		{"empty, accepted", &fakeSource{}, 0, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			first := asOf.Format(data.SnapshotIDLayout)
			if _, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf, MapTop: -1}); err != nil {
				t.Fatal(err)
			}
			next := asOf.Add(time.Hour)
			m, err := RunFrom(context.Background(), tc.next, Options{DataDir: dir, Now: next, MapTop: -1,
				MaxShrink: tc.maxShrink, AcceptShrink: tc.accept})
			cur, _ := snapshot.Local(dir).Current()
			id := next.Format(data.SnapshotIDLayout)
			if tc.guarded {
				var se *ShrinkError
				if !errors.As(err, &se) || !errors.Is(err, ErrShrunk) || m == nil {
					t.Fatalf("got %v, want a ShrinkError", err)
				}
				if cur != first {
					t.Errorf("current → %s, want %s", cur, first)
				}
				if _, err := snapshot.ReadManifest(snapshot.Local(dir), id); err != nil {
					t.Errorf("the guarded snapshot is not written: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cur != id {
				t.Errorf("current → %s, want %s", cur, id)
			}
		})
	}
}

// Snapshot folders and files follow the umask (0755 and 0644 under 022),
// so that other users can query them.
func TestSnapshotModesFollowUmask(t *testing.T) {
	old := syscall.Umask(0o022) // no other test of this package runs in parallel
	defer syscall.Umask(old)
	dir := t.TempDir()
	m, err := RunFrom(context.Background(), smallGraph(), Options{DataDir: dir, Now: asOf, MapTop: -1})
	if err != nil {
		t.Fatal(err)
	}
	snap := snapshot.Local(dir).Location(m.ID, "")
	st, err := os.Stat(snap)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o755 {
		t.Errorf("snapshot folder mode %o, want 755", got)
	}
	entries, err := os.ReadDir(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if got := info.Mode().Perm(); got != 0o644 {
			t.Errorf("%s: mode %o, want 644", e.Name(), got)
		}
	}
}
