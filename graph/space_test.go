package graph

import (
	"errors"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/data"
)

// setFree makes the file system report free bytes, for the test's length.
func setFree(t *testing.T, free *int64) {
	t.Helper()
	old := freeSpace
	freeSpace = func(string) (int64, error) { return *free, nil }
	t.Cleanup(func() { freeSpace = old })
}

// Below the reserve a writable store refuses to open or to write, with an
// error that says why and what to do; reads go on.
func TestDiskFull(t *testing.T) {
	free := int64(10 << 20)
	setFree(t, &free)
	dir := t.TempDir()

	_, err := Open(dir, Options{Create: true})
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Open with 10 MiB free: %v, want ErrDiskFull", err)
	}
	for _, want := range []string{"10 MiB (10485760 bytes) free", "256 MiB (268435456 bytes)", dir, "free some space"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	free = 1 << 40
	s, err := Open(dir, Options{Create: true})
	must(t, err)
	defer s.Close()
	must(t, s.RecordVisit(visit("a.example", t0, data.OutcomeOK, link("b.example"))))

	free = 100 << 20
	if err := s.RecordVisit(visit("a.example", t0.Add(1), data.OutcomeOK)); !errors.Is(err, ErrDiskFull) {
		t.Errorf("RecordVisit with 100 MiB free: %v, want ErrDiskFull", err)
	}
	if err := s.AddDomains([]string{"c.example"}, t0, true); !errors.Is(err, ErrDiskFull) {
		t.Errorf("AddDomains with 100 MiB free: %v, want ErrDiskFull", err)
	}
	if got := len(edgesOf(t, s, "a.example")); got != 1 {
		t.Errorf("reads on a full disk: %d edges, want 1", got)
	}

	// A smaller reserve, or none, lets it write; read-only stores never ask.
	s2, err := Open(t.TempDir(), Options{Create: true, MinFreeSpace: 50 << 20})
	must(t, err)
	must(t, s2.RecordVisit(visit("a.example", t0, data.OutcomeOK)))
	must(t, s2.Close())
	s3, err := Open(t.TempDir(), Options{Create: true, MinFreeSpace: -1})
	must(t, err)
	must(t, s3.Close())
	free = 0
	must(t, s.Close())
	ro, err := Open(dir, Options{Create: true, ReadOnly: true})
	must(t, err)
	must(t, ro.Close())
}

// The real statfs answers for a real directory.
func TestFreeSpace(t *testing.T) {
	n, err := freeSpace(t.TempDir())
	if err != nil || n <= 0 {
		t.Errorf("freeSpace: %d, %v", n, err)
	}
}
