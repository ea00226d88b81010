package objstore

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// Dir is a Store in a local directory: the object "a/b/c" is the file
// <root>/a/b/c. A Put writes a temporary file beside the target, syncs it,
// renames it over the target and syncs the directory, so that a crash
// leaves the old file or the new one, never part of one. Files and
// directories are created with modes 0666 and 0777 less the umask, as
// other tools' files are.
type Dir struct {
	root string
}

// NewDir returns the Store rooted at the directory root. It does not touch
// the disk: Check reports a missing root, and Put never creates it (a
// mount point that is not mounted should fail, not fill the disk below
// it).
func NewDir(root string) (*Dir, error) {
	if root == "" {
		return nil, fmt.Errorf("%w: empty directory", ErrBadLocation)
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadLocation, root, err)
	}
	return &Dir{root: abs}, nil
}

// Root is the directory the store is rooted at.
func (d *Dir) Root() string { return d.root }

func (d *Dir) String() string { return d.root }

func (d *Dir) path(key string) string {
	return filepath.Join(d.root, filepath.FromSlash(key))
}

// Check reports whether the root exists and is a directory.
func (d *Dir) Check(ctx context.Context) error {
	fi, err := os.Stat(d.root)
	if err != nil {
		return fmt.Errorf("snapshot store %s: %w", d.root, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("snapshot store %s: not a directory", d.root)
	}
	return nil
}

// Put writes the object through a temporary file (see Dir).
func (d *Dir) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("put %s: %w", d.root, err)
	}
	path := d.path(key)
	body, err := exactBody(r, size, path)
	if err != nil {
		return fmt.Errorf("put: %w", err)
	}
	if err := d.put(ctx, path, body); err != nil {
		return fmt.Errorf("put %s: %w", path, err)
	}
	return nil
}

func (d *Dir) put(ctx context.Context, path string, r io.Reader) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := filepath.Dir(path)
	if err := d.mkdirs(dir); err != nil {
		return err
	}
	tmp := filepath.Join(dir, tempPrefix+filepath.Base(path)+"-"+rand.Text()[:10])
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if errors.Is(err, fs.ErrNotExist) {
		// A Delete removed the (then empty) directory between mkdirs and
		// here: make it again, once.
		if err = d.mkdirs(dir); err == nil {
			f, err = os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
		}
	}
	if err != nil {
		return err
	}
	_, err = io.Copy(f, ctxReader{ctx, r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return atomicfile.SyncDir(dir)
}

// mkdirs creates dir and its missing parents below the root, syncing the
// parent of each one it creates so that the new entry survives a crash.
func (d *Dir) mkdirs(dir string) error {
	if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
		return nil
	}
	rel, err := filepath.Rel(d.root, dir)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return fmt.Errorf("%s is not below the store's root %s", dir, d.root)
	}
	if _, err := os.Stat(d.root); err != nil {
		return fmt.Errorf("snapshot store %s: %w", d.root, err)
	}
	cur := d.root
	for seg := range strings.SplitSeq(rel, string(filepath.Separator)) {
		parent := cur
		cur = filepath.Join(cur, seg)
		err := os.Mkdir(cur, 0o777)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return err
		}
		if err := atomicfile.SyncDir(parent); err != nil {
			return err
		}
	}
	return nil
}

// Open opens the file of the object key.
func (d *Dir) Open(ctx context.Context, key string) (Object, error) {
	if err := checkKey(key); err != nil {
		return nil, fmt.Errorf("open %s: %w", d.root, err)
	}
	path := d.path(key)
	f, err := os.Open(path)
	if err != nil {
		return nil, err // *fs.PathError: names the path, wraps ErrNotExist
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: path, Err: fmt.Errorf("not a regular file: %w", ErrNotExist)}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return &fileObject{File: f, size: fi.Size()}, nil
}

type fileObject struct {
	*os.File
	size int64
}

func (o *fileObject) Size() int64 { return o.size }

// Stat describes the file of the object key.
func (d *Dir) Stat(ctx context.Context, key string) (Info, error) {
	if err := checkKey(key); err != nil {
		return Info{}, fmt.Errorf("stat %s: %w", d.root, err)
	}
	path := d.path(key)
	fi, err := os.Stat(path)
	if err != nil {
		return Info{}, err
	}
	if !fi.Mode().IsRegular() {
		return Info{}, &fs.PathError{Op: "stat", Path: path, Err: fmt.Errorf("not a regular file: %w", ErrNotExist)}
	}
	return Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// List walks the directories under prefix. Temporary files, symbolic links
// (such as rebuilds/current) and other non-regular files are not objects.
func (d *Dir) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := checkPrefix(prefix); err != nil {
		return nil, fmt.Errorf("list %s: %w", d.root, err)
	}
	start := d.root
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = d.path(prefix[:i])
	}
	var out []Info
	err := filepath.WalkDir(start, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if path == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(e.Name(), tempPrefix) {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(d.root, path)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while we walked
		}
		if err != nil {
			return err
		}
		out = append(out, Info{Key: key, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", d.path(prefix), err)
	}
	// WalkDir orders names within a directory; keys order across them
	// ("a-b" < "a/b") is plain string order.
	slices.SortFunc(out, func(a, b Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Delete removes the file of the object key, then every directory it
// leaves empty up to the root.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := checkKey(key); err != nil {
		return fmt.Errorf("delete %s: %w", d.root, err)
	}
	path := d.path(key)
	if fi, err := os.Lstat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("delete %s: a directory, not an object", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	for dir != d.root && strings.HasPrefix(dir, d.root) {
		if os.Remove(dir) != nil {
			break // not empty (or gone): stop here
		}
		dir = filepath.Dir(dir)
	}
	if err := atomicfile.SyncDir(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// removeTemp removes what a killed Put leaves behind: temporary files (and
// directories) under prefix. Only call it when no Put is running on the
// store (under the rebuild lock).
func (d *Dir) removeTemp(prefix string) ([]string, error) {
	start := d.path(strings.TrimSuffix(prefix, "/"))
	if prefix == "" {
		start = d.root
	}
	var removed []string
	err := filepath.WalkDir(start, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if path == start && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll
			}
			return err
		}
		if !strings.HasPrefix(e.Name(), tempPrefix) {
			return nil
		}
		if err := os.RemoveAll(path); err != nil {
			return err
		}
		removed = append(removed, path)
		if e.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	return removed, err
}

// ctxReader stops a copy when its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
