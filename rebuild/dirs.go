package rebuild

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// Names inside <data-dir>/rebuilds.
const (
	RebuildsDir = "rebuilds"
	CurrentLink = "current"
	lockFile    = ".lock"
	tempPrefix  = ".tmp-" // every temporary entry starts so: stale ones are removed
)

// ErrBusy: another rebuild holds the lock.
var ErrBusy = errors.New("another rebuild is running")

// ErrExists: a snapshot with this id exists already.
var ErrExists = errors.New("snapshot exists already")

// lock takes the rebuild lock (flock on rebuilds/.lock, released when the
// process dies, so a killed rebuild never blocks the next). It does not
// wait: cron runs that overlap should fail fast and say why.
func lock(dir string) (release func(), err error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (it holds %s); wait for it to finish", ErrBusy, path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}

// cleanStale removes what killed rebuilds left: temporary snapshot
// directories and temporary symlinks. Only called with the lock held, so
// nothing else is writing them.
func cleanStale(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// currentID returns the snapshot id `current` points at; "" when none.
func currentID(dir string) (string, error) {
	target, err := os.Readlink(filepath.Join(dir, CurrentLink))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Base(target), nil
}

// pointCurrent moves `current` to id atomically: a new relative symlink
// under a temporary name, renamed over the old one (rename(2) replaces it in
// one step, so readers see the old or the new snapshot, never none).
func pointCurrent(dir, id string) error {
	tmp := filepath.Join(dir, tempPrefix+"current-"+id)
	os.Remove(tmp)
	if err := os.Symlink(id, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, CurrentLink)); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// snapshotIDs lists the snapshot directories in dir, oldest first (ids sort
// by time).
func snapshotIDs(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := time.Parse(data.SnapshotIDLayout, e.Name()); err == nil {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// prune removes all but the newest keep snapshots, never the current one.
func prune(dir string, keep int) ([]string, error) {
	ids, err := snapshotIDs(dir)
	if err != nil {
		return nil, err
	}
	cur, err := currentID(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	for i, id := range ids {
		if i >= len(ids)-keep || id == cur {
			continue
		}
		// Rename first so that a prune killed halfway leaves a temporary
		// entry the next rebuild removes, never a half-deleted snapshot.
		tmp := filepath.Join(dir, tempPrefix+"old-"+id)
		if err := os.Rename(filepath.Join(dir, id), tmp); err != nil {
			return removed, err
		}
		if err := os.RemoveAll(tmp); err != nil {
			return removed, err
		}
		removed = append(removed, id)
	}
	return removed, nil
}

// syncDir makes renames and new entries in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
