package graph

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mapthenet/mapthenet/data"
)

// A process killed between creating a write-ahead or value-log file and
// growing it leaves the file empty, which Badger alone cannot open past;
// the next writable Open removes it and the store opens with its data.
func TestOpenAfterTornFileCreation(t *testing.T) {
	for _, name := range []string{"000009.vlog", "00009.mem"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openDir(t, dir)
			must(t, s.RecordVisit(visit("a.example", t0, data.OutcomeOK, link("b.example"))))
			must(t, s.Close())
			must(t, os.WriteFile(filepath.Join(dir, name), nil, 0o644))

			s = openDir(t, dir)
			defer s.Close()
			if got := len(edgesOf(t, s, "a.example")); got != 1 {
				t.Errorf("%d edges after the recovery, want 1", got)
			}
			if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the empty %s is still there (%v)", name, err)
			}
		})
	}
}

// While another process holds the store, nothing is removed: its files are
// empty for a moment too.
func TestTornFilesOnlyUnderTheLock(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "000001.vlog")
	must(t, os.WriteFile(empty, nil, 0o644))
	d, err := os.Open(dir)
	must(t, err)
	defer d.Close()
	must(t, syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
	// A second descriptor's flock conflicts, as another process's would.
	must(t, removeTornFiles(dir, slog.New(slog.DiscardHandler)))
	if _, err := os.Stat(empty); err != nil {
		t.Errorf("removed under another holder's lock: %v", err)
	}
	if err := removeTornFiles(filepath.Join(dir, "missing"), slog.New(slog.DiscardHandler)); err != nil {
		t.Errorf("a store not made yet: %v", err)
	}
}

// A read-only open of a store a kill left unclean says how to recover.
func TestUncleanHint(t *testing.T) {
	err := errors.New("while opening memtables: Log truncate required to run DB. This might result in data loss")
	if h := uncleanHint(err, true); !strings.Contains(h, "open it once for writing") {
		t.Errorf("hint %q", h)
	}
	if h := uncleanHint(err, false); h != "" {
		t.Errorf("writable open: hint %q", h)
	}
}
