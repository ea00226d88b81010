package snapshot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// Names inside the data directory and its rebuilds/ directory.
const (
	DirName     = "rebuilds" // <data-dir>/rebuilds holds the snapshots
	CurrentName = "current"  // rebuilds/current: relative symlink to the current snapshot
	LockName    = ".lock"    // rebuilds/.lock: the rebuild lock
	tempPrefix  = ".tmp-"    // every temporary entry starts so: stale ones are removed
)

// ErrBusy: another rebuild holds the lock.
var ErrBusy = errors.New("another rebuild is running")

// ErrExists: a snapshot with this id exists already.
var ErrExists = errors.New("snapshot exists already")

// Dir is the local snapshot directory, <data-dir>/rebuilds (DESIGN.md,
// "The snapshot"):
//
//	rebuilds/<id>/          one complete snapshot (its files and manifest.json)
//	rebuilds/current        relative symlink to the current snapshot's <id>
//	rebuilds/.lock          the rebuild lock (flock)
//	rebuilds/.tmp-<id>-*    a snapshot being written (Stage); .tmp-* entries
//	                        left by a killed process are removed by CleanStale
//
// It is the Storage of every snapshot today, and the local side of a
// rebuild in any case: the lock and the staging of files.
type Dir struct {
	root string
}

var _ Storage = (*Dir)(nil)

// Local is the snapshot directory of the data directory dataDir. Nothing
// is read or made until a method needs it.
func Local(dataDir string) *Dir { return &Dir{root: filepath.Join(dataDir, DirName)} }

// Current returns the id `current` names; "" when there is none.
func (d *Dir) Current() (string, error) {
	target, err := os.Readlink(filepath.Join(d.root, CurrentName))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return filepath.Base(target), nil
}

// List returns the snapshot directories, oldest first (ids sort by time);
// none when the directory does not exist yet.
func (d *Dir) List() ([]string, error) {
	entries, err := os.ReadDir(d.root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, ok := ParseID(e.Name()); ok {
			ids = append(ids, e.Name())
		}
	}
	slices.Sort(ids)
	return ids, nil
}

// Stat returns nil when snapshot id's directory exists.
func (d *Dir) Stat(id string) error {
	_, err := os.Stat(filepath.Join(d.root, id))
	return err
}

// Open opens file of snapshot id.
func (d *Dir) Open(id, file string) (File, error) {
	f, err := os.Open(d.Location(id, file))
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return localFile{File: f, size: st.Size()}, nil
}

// localFile is an open file and its size.
type localFile struct {
	*os.File
	size int64
}

func (f localFile) Size() int64 { return f.size }

// Location is the path of file of snapshot id.
func (d *Dir) Location(id, file string) string { return filepath.Join(d.root, id, file) }

// CurrentPath is the path of file through the `current` link: one that
// stays valid as rebuilds move `current` (what to give DuckDB).
func (d *Dir) CurrentPath(file string) string { return filepath.Join(d.root, CurrentName, file) }

// Scratch makes rebuilds/.tmp-<name>-*, a directory for a rebuild's
// scratch files (its sorted runs): the caller removes it when done, and
// CleanStale removes what a killed rebuild left.
func (d *Dir) Scratch(name string) (string, error) {
	if err := os.MkdirAll(d.root, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(d.root, tempPrefix+name+"-")
}

// Stage makes rebuilds/.tmp-<id>-* with the umask's directory mode (so
// that the operator's DuckDB users can read the snapshot it becomes).
func (d *Dir) Stage(id string) (string, error) {
	final := filepath.Join(d.root, id)
	if _, err := os.Lstat(final); err == nil {
		return "", fmt.Errorf("%w: %s (one snapshot per as-of second; pass another --now or remove it)", ErrExists, final)
	}
	if err := os.MkdirAll(d.root, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(d.root, tempPrefix+id+"-")
	if err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, dirMode()); err != nil { // MkdirTemp makes it 0700
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// Publish syncs the staged directory, renames it to rebuilds/<id> and
// makes the rename durable.
func (d *Dir) Publish(id, staged string) error {
	if filepath.Dir(staged) != d.root {
		return fmt.Errorf("publishing %s: not staged in %s", staged, d.root)
	}
	if err := atomicfile.SyncDir(staged); err != nil {
		return err
	}
	if err := os.Rename(staged, filepath.Join(d.root, id)); err != nil {
		return err
	}
	return atomicfile.SyncDir(d.root)
}

// SetCurrent moves `current` to id atomically: a new relative symlink
// under a temporary name, renamed over the old one (rename(2) replaces it
// in one step, so readers see the old or the new snapshot, never none).
func (d *Dir) SetCurrent(id string) error {
	tmp := filepath.Join(d.root, tempPrefix+"current-"+id)
	os.Remove(tmp)
	if err := os.Symlink(id, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(d.root, CurrentName)); err != nil {
		os.Remove(tmp)
		return err
	}
	return atomicfile.SyncDir(d.root)
}

// Replace has fill write rebuilds/<id>/.tmp-<file> and renames it over
// the file; a replace cut off leaves only that temporary file, which the
// next replace of the file removes.
func (d *Dir) Replace(id, file string, fill func(path string) (bool, error)) error {
	path := d.Location(id, file)
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(path), tempPrefix+filepath.Base(file))
	os.Remove(tmp) // left by a replace cut off
	keep, err := fill(tmp)
	if err != nil || !keep {
		os.Remove(tmp)
		return err
	}
	if err := os.Chmod(tmp, st.Mode().Perm()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// Add puts a file that published snapshot id does not hold yet into it:
// a fleet node's copy of a snapshot holds the schedule partitions of the
// shards it holds, and gets the partition of a shard it takes. fill
// writes the file, complete and synced, at a local path beside its place;
// one rename puts it there, so a reader sees it whole or not at all.
// A file already there is left as it is (fill is not called).
func (d *Dir) Add(id, file string, fill func(path string) error) error {
	if err := d.Stat(id); err != nil {
		return err
	}
	path := d.Location(id, file)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), dirMode()); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), tempPrefix+filepath.Base(file)+"-")
	if err != nil {
		return err
	}
	tmp.Close()
	if err := fill(tmp.Name()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o666&^umask()); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(path))
}

// Remove deletes snapshot id. It renames it first, so that a removal
// killed halfway leaves a temporary entry CleanStale removes, never a
// half-deleted snapshot.
func (d *Dir) Remove(id string) error {
	tmp := filepath.Join(d.root, tempPrefix+"old-"+id)
	if err := os.Rename(filepath.Join(d.root, id), tmp); err != nil {
		return err
	}
	return os.RemoveAll(tmp)
}

// Lock takes the rebuild lock (flock on rebuilds/.lock, released when the
// process dies, so a killed rebuild never blocks the next), making the
// directory if need be. It does not wait: cron runs that overlap should
// fail fast and say why (ErrBusy).
func (d *Dir) Lock() (release func(), err error) {
	if err := os.MkdirAll(d.root, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(d.root, LockName)
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

// LockWait takes the rebuild lock, polling while another holds it, until
// ctx ends.
func (d *Dir) LockWait(ctx context.Context) (func(), error) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		release, err := d.Lock()
		if !errors.Is(err, ErrBusy) {
			return release, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the rebuild in progress to finish: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// CleanStale removes what killed processes left: staged snapshots,
// temporary symlinks, snapshots half removed. Call it with the lock held,
// so that nothing else is writing them. It returns the names removed.
func (d *Dir) CleanStale() ([]string, error) {
	entries, err := os.ReadDir(d.root)
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(d.root, e.Name())); err != nil {
			return removed, err
		}
		removed = append(removed, e.Name())
	}
	return removed, nil
}

// umask is the process's file mode creation mask, read without changing
// it (syscall.Umask sets it, racing every goroutine that creates files);
// Linux says it in /proc/self/status. 022 when it cannot be read.
func umask() os.FileMode {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "Umask:"); ok {
				if m, err := strconv.ParseUint(strings.TrimSpace(v), 8, 32); err == nil {
					return os.FileMode(m)
				}
			}
		}
	}
	return 0o022
}

// dirMode is the mode a new directory gets under the umask: what MkdirAll
// gives, and what a staged snapshot's folder, made 0700 by os.MkdirTemp,
// is set to, so that the operator's DuckDB users can read it (issue 13).
func dirMode() os.FileMode { return 0o777 &^ umask() }
