package objstore_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mapthenet/mapthenet/objstore"
)

// TestDirModesFollowUmask: files 0666 and directories 0777 less the umask,
// as other tools' (not os.CreateTemp's 0600).
func TestDirModesFollowUmask(t *testing.T) {
	for _, umask := range []int{0o022, 0o077} {
		old := syscall.Umask(umask)
		root := t.TempDir()
		d, _ := objstore.NewDir(root)
		put(t, d, "x/y/file", "data")
		syscall.Umask(old)
		for path, want := range map[string]fs.FileMode{
			"x":        0o777 &^ fs.FileMode(umask),
			"x/y":      0o777 &^ fs.FileMode(umask),
			"x/y/file": 0o666 &^ fs.FileMode(umask),
		} {
			fi, err := os.Stat(filepath.Join(root, path))
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != want {
				t.Errorf("umask %03o: %s has mode %03o; want %03o", umask, path, got, want)
			}
		}
	}
}

// TestDirRootMustExist: a missing root (an unmounted mount point) fails
// Check and Put, and Put does not create it.
func TestDirRootMustExist(t *testing.T) {
	root := filepath.Join(t.TempDir(), "not-mounted")
	d, err := objstore.NewDir(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Check(context.Background()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Check = %v", err)
	}
	if err := d.Put(context.Background(), "a/b", strings.NewReader("x"), 1); err == nil {
		t.Error("Put into a missing root succeeded")
	}
	if _, err := os.Stat(root); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Put created the root: %v", err)
	}
}

// TestDirLeavesNoTrace: temporary files are never listed, a failed Put
// removes its own, Delete removes the directories it empties, and
// symbolic links and directories are not objects.
func TestDirLeavesNoTrace(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	d, _ := objstore.NewDir(root)
	put(t, d, "a/b/c", "x")
	put(t, d, "a/keep", "y")
	// What a killed Put leaves: a temporary file beside its target.
	if err := os.WriteFile(filepath.Join(root, "a/b/.tmp-c-123"), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("b", filepath.Join(root, "a/link")); err != nil {
		t.Fatal(err)
	}
	list, err := d.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(keys(list), " "); got != "a/b/c a/keep" {
		t.Errorf("List = %s", got)
	}
	if _, err := d.Stat(ctx, "a/b"); !errors.Is(err, objstore.ErrNotExist) {
		t.Errorf("Stat(directory) = %v; want ErrNotExist", err)
	}
	if err := d.Delete(ctx, "a/b"); err == nil {
		t.Error("Delete(directory) succeeded")
	}
	// A Put from a failing source leaves no temporary file.
	if err := d.Put(ctx, "a/new", strings.NewReader("ab"), 3); err == nil {
		t.Fatal("short Put succeeded")
	}
	if m, _ := filepath.Glob(filepath.Join(root, "a", ".tmp-new*")); len(m) != 0 {
		t.Errorf("a failed Put left %v", m)
	}
	os.Remove(filepath.Join(root, "a/b/.tmp-c-123"))
	if err := d.Delete(ctx, "a/b/c"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a/b")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Delete left the empty directory a/b: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); err != nil {
		t.Errorf("Delete removed a, which holds a/keep: %v", err)
	}
}
