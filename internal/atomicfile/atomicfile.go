// Package atomicfile writes a file all at once or not at all, durably: the
// one way the project replaces a file whose readers must never see half of
// it (configs, the shard layout, hold-offs, rank and edge files, maps,
// backups).
//
// Hand-written rather than github.com/google/renameio, which "concerns
// itself only with atomicity" (its README): it does not sync the directory
// after the rename, so a crash right after a reported write could lose the
// new name. This is the same few steps, with that one.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Write makes the file at path with fill: fill writes a temporary file in
// path's directory (so that the rename stays on one file system; its name
// starts with a dot, so listings and globs of the directory skip it), which
// is then given perm, synced, closed and renamed over path, and the
// directory is synced so that the new name survives a crash. If fill or any
// step fails, the temporary file is removed and whatever was at path stays
// as it was. fill must not close the file.
func Write(path string, perm fs.FileMode, fill func(f *os.File) error) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := tmp.Chmod(perm); err != nil { // CreateTemp makes it 0600
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if err := SyncDir(dir); err != nil {
		return fmt.Errorf("%s is written, but syncing its directory failed: %w", path, err)
	}
	return nil
}

// WriteFile is Write of data.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(f *os.File) error {
		_, err := f.Write(data)
		return err
	})
}

// SyncDir makes the entries of directory dir durable: a new, renamed or
// removed name in it survives a crash once SyncDir returns. A file system
// that cannot sync directories (EINVAL) is not an error.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
