package graph

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// What a process killed at the wrong moment leaves in a store directory
// that Badger itself cannot get past (found by the e2e crash test, which
// kills the crawl with SIGKILL at random moments).

// removeTornFiles removes the zero-length write-ahead (.mem) and value-log
// (.vlog) files of dir. Badger creates such a file, then grows it
// (ftruncate) and writes its header; a kill in between leaves it empty,
// and Badger then refuses to open the store ("Create a new file"). An
// empty file never held a byte, so nothing can point into it: removing it
// loses nothing.
//
// Only under the directory lock Badger itself takes (flock on the
// directory): a running crawl's file is empty for a moment too. When the
// lock is held elsewhere this does nothing, and Badger reports ErrLocked.
func removeTornFiles(dir string, log *slog.Logger) error {
	d, err := os.Open(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	defer d.Close() // releases the lock
	if syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		return nil
	}
	return removeTornFilesLocked(dir, log)
}

// removeTornFilesLocked is removeTornFiles with the directory lock held.
func removeTornFilesLocked(dir string, log *slog.Logger) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		ext := filepath.Ext(e.Name())
		if !e.Type().IsRegular() || (ext != ".mem" && ext != ".vlog") {
			continue
		}
		info, err := e.Info()
		if err != nil || info.Size() != 0 {
			continue
		}
		path := filepath.Join(dir, e.Name())
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("graph: remove the empty file a killed process left: %w", err)
		}
		log.Warn("removed an empty store file a killed process left", "file", path)
	}
	return nil
}

// uncleanHint explains Badger's refusal to open, read-only, a store that
// was not closed (its write-ahead log's torn tail must be cut first, which
// a read-only open may not do).
func uncleanHint(err error, readOnly bool) string {
	if !readOnly || !strings.Contains(err.Error(), "truncate") {
		return ""
	}
	return " (the store was not closed cleanly, by a killed crawl perhaps: open it once for writing, " +
		"as any crawl or rebuild does, and it recovers)"
}
