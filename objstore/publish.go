package objstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// Keys of the snapshot layout (see the package doc).
const (
	RebuildsPrefix = "rebuilds/"
	CurrentKey     = RebuildsPrefix + "current"
	PartsPrefix    = "parts/"
)

// ErrNoSnapshot: no snapshot has been published to the store yet.
var ErrNoSnapshot = errors.New("no snapshot published yet")

// ErrIncomplete: the snapshot has no manifest.json, so its upload never
// finished (or its removal began).
var ErrIncomplete = errors.New("snapshot is incomplete (no manifest.json)")

// ErrExists: a complete snapshot with this id is in the store already.
var ErrExists = errors.New("snapshot exists already")

// SnapshotPrefix is the prefix of snapshot id's objects: rebuilds/<id>/.
func SnapshotPrefix(id string) string { return RebuildsPrefix + id + "/" }

// SnapshotKey is the key of one file of snapshot id:
// rebuilds/<id>/<file>.
func SnapshotKey(id, file string) string { return SnapshotPrefix(id) + file }

// CheckID reports whether id is a snapshot id: its as-of time in
// data.SnapshotIDLayout (2006-01-02T150405Z).
func CheckID(id string) error {
	t, err := time.Parse(data.SnapshotIDLayout, id)
	if err != nil || t.Format(data.SnapshotIDLayout) != id {
		return fmt.Errorf("%q is not a snapshot id (want e.g. %s)", id, data.SnapshotIDLayout)
	}
	return nil
}

// Publish makes the finished snapshot in the local directory dir the
// store's current one: Upload, then SetCurrent. If it fails at any point,
// `current` still names the snapshot it named before, and what was
// uploaded is an incomplete snapshot that readers ignore and
// RemoveIncomplete deletes. log (nil: none) gets a line per file.
func Publish(ctx context.Context, st Store, id, dir string, log *slog.Logger) error {
	if err := Upload(ctx, st, id, dir, log); err != nil {
		return err
	}
	return SetCurrent(ctx, st, id)
}

// Upload copies every file of the finished snapshot in the local directory
// dir (subdirectories included) to rebuilds/<id>/, manifest.json last,
// after checking that every other file arrived whole; it does not move
// `current`. It refuses an id that is complete in the store already
// (ErrExists), and replaces what an earlier failed upload of the same id
// left.
func Upload(ctx context.Context, st Store, id, dir string, log *slog.Logger) error {
	if err := CheckID(id); err != nil {
		return fmt.Errorf("upload snapshot to %s: %w", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, data.ManifestFile)); err != nil {
		return fmt.Errorf("upload snapshot %s: %s is not a finished snapshot: %w", id, dir, err)
	}
	switch _, err := st.Stat(ctx, SnapshotKey(id, data.ManifestFile)); {
	case err == nil:
		return fmt.Errorf("upload snapshot %s to %s: %w", id, st, ErrExists)
	case !errors.Is(err, ErrNotExist):
		return fmt.Errorf("upload snapshot %s: %w", id, err)
	}
	if err := UploadDir(ctx, st, SnapshotPrefix(id), dir, data.ManifestFile, log); err != nil {
		return fmt.Errorf("upload snapshot %s: %w", id, err)
	}
	return nil
}

// UploadDir replaces what is under prefix (a "directory": it ends in '/')
// with the regular files below the local directory dir: it deletes the
// objects under prefix (an earlier attempt's), then copies each file to
// prefix + its path relative to dir (with '/'), in path order, except that
// the file last (a relative path; "" for none) goes after all others, and
// only once a listing shows every other object with its file's size. So
// the presence of last means the rest is whole. Shard parts use it too
// (parts/<id>/shard=NN/).
func UploadDir(ctx context.Context, st Store, prefix, dir, last string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !strings.HasSuffix(prefix, "/") || checkPrefix(prefix) != nil {
		return fmt.Errorf("upload %s to %s: the prefix must be a non-empty path ending in '/'", dir, st)
	}
	files, err := localFiles(dir)
	if err != nil {
		return err
	}
	if last != "" {
		i := slices.IndexFunc(files, func(f localFile) bool { return f.rel == last })
		if i < 0 {
			return fmt.Errorf("%s has no %s", dir, last)
		}
		f := files[i]
		files = append(slices.Delete(files, i, i+1), f)
	}
	if err := deletePrefix(ctx, st, prefix); err != nil {
		return fmt.Errorf("upload %s: clearing an earlier attempt: %w", dir, err)
	}
	want := map[string]int64{}
	for i, f := range files {
		if i == len(files)-1 && last != "" {
			if err := verifySizes(ctx, st, prefix, want); err != nil {
				return err
			}
		}
		key := prefix + f.rel
		start := time.Now()
		if err := PutFile(ctx, st, key, f.path); err != nil {
			return err
		}
		want[key] = f.size
		log.Info("uploaded", "object", key, "bytes", f.size, "seconds", time.Since(start).Round(time.Millisecond).Seconds())
	}
	return nil
}

type localFile struct {
	rel, path string
	size      int64
}

// localFiles lists the regular files below dir, in path order; temporary
// files are left out, anything else but a directory is an error.
func localFiles(dir string) ([]localFile, error) {
	var files []localFile
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// dir itself may be a staged .tmp- directory (snapshot.Dir.Stage's).
		if path != dir && strings.HasPrefix(e.Name(), tempPrefix) {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if e.IsDir() {
			return nil
		}
		if !e.Type().IsRegular() {
			return fmt.Errorf("%s: not a regular file", path)
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		files = append(files, localFile{rel: filepath.ToSlash(rel), path: path, size: fi.Size()})
		return nil
	})
	return files, err
}

// PutFile uploads the file at path as the object key.
func PutFile(ctx context.Context, st Store, key, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	return st.Put(ctx, key, f, fi.Size())
}

// verifySizes checks that the store lists exactly the objects want names
// under prefix, each with its size.
func verifySizes(ctx context.Context, st Store, prefix string, want map[string]int64) error {
	got, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	seen := 0
	for _, o := range got {
		size, ok := want[o.Key]
		if !ok {
			return fmt.Errorf("%s: %s holds %s, which was not uploaded", st, prefix, o.Key)
		}
		if o.Size != size {
			return fmt.Errorf("%s: %s holds %d bytes, not the %d uploaded", st, o.Key, o.Size, size)
		}
		seen++
	}
	if seen != len(want) {
		return fmt.Errorf("%s: %s lists %d of the %d objects uploaded", st, prefix, seen, len(want))
	}
	return nil
}

// SetCurrent points rebuilds/current at the complete snapshot id: in a
// local directory by a symbolic link renamed into place (so that
// rebuilds/current/<file> paths work, as in a data directory), elsewhere
// by a small object holding just the id (no newline, so that SQL can
// splice it into a path as it is), replaced in one PUT.
func SetCurrent(ctx context.Context, st Store, id string) error {
	if err := CheckID(id); err != nil {
		return fmt.Errorf("set current in %s: %w", st, err)
	}
	if _, err := st.Stat(ctx, SnapshotKey(id, data.ManifestFile)); err != nil {
		if errors.Is(err, ErrNotExist) {
			return fmt.Errorf("set current in %s to %s: %w", st, id, ErrIncomplete)
		}
		return fmt.Errorf("set current to %s: %w", id, err)
	}
	if d, ok := st.(*Dir); ok {
		return d.symlinkCurrent(id)
	}
	body := []byte(id)
	return st.Put(ctx, CurrentKey, bytes.NewReader(body), int64(len(body)))
}

func (d *Dir) symlinkCurrent(id string) error {
	link := d.path(CurrentKey)
	dir := filepath.Dir(link)
	if err := d.mkdirs(dir); err != nil {
		return fmt.Errorf("set current in %s: %w", d, err)
	}
	tmp := filepath.Join(dir, tempPrefix+"current-"+id)
	os.Remove(tmp)
	if err := os.Symlink(id, tmp); err != nil {
		return fmt.Errorf("set current in %s: %w", d, err)
	}
	if err := os.Rename(tmp, link); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("set current in %s: %w", d, err)
	}
	return atomicfile.SyncDir(dir)
}

// Current reads the id rebuilds/current names; the error wraps
// ErrNoSnapshot when there is none. It does not check the snapshot:
// Resolve does.
func Current(ctx context.Context, st Store) (string, error) {
	var id string
	if d, ok := st.(*Dir); ok {
		link := d.path(CurrentKey)
		target, err := os.Readlink(link)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return "", fmt.Errorf("%w in %s (no %s)", ErrNoSnapshot, d, CurrentKey)
		case err == nil:
			id = filepath.Base(target)
		default:
			// Not a link: a pointer file, as on S3.
			if id, err = readCurrentObject(ctx, st); err != nil {
				return "", err
			}
		}
	} else {
		var err error
		if id, err = readCurrentObject(ctx, st); err != nil {
			return "", err
		}
	}
	if err := CheckID(id); err != nil {
		return "", fmt.Errorf("%s in %s is damaged: %w", CurrentKey, st, err)
	}
	return id, nil
}

func readCurrentObject(ctx context.Context, st Store) (string, error) {
	obj, err := st.Open(ctx, CurrentKey)
	if errors.Is(err, ErrNotExist) {
		return "", fmt.Errorf("%w in %s (no %s)", ErrNoSnapshot, st, CurrentKey)
	}
	if err != nil {
		return "", err
	}
	defer obj.Close()
	b, err := io.ReadAll(io.LimitReader(obj, 256))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// Resolve returns the id of the snapshot a reader should read: id itself,
// or the one `current` names when id is "". It checks that the snapshot
// is complete (ErrIncomplete). Resolve once and read every file of that
// id: a Publish meanwhile moves `current`, not what the reader reads.
func Resolve(ctx context.Context, st Store, id string) (string, error) {
	if id == "" {
		cur, err := Current(ctx, st)
		if err != nil {
			return "", err
		}
		id = cur
	} else if err := CheckID(id); err != nil {
		return "", err
	}
	if _, err := st.Stat(ctx, SnapshotKey(id, data.ManifestFile)); err != nil {
		if errors.Is(err, ErrNotExist) {
			return "", fmt.Errorf("snapshot %s in %s: %w", id, st, ErrIncomplete)
		}
		return "", err
	}
	return id, nil
}

// Snapshots lists the snapshot ids under rebuilds/, oldest first: those
// with a manifest.json (complete) and those without (incomplete).
func Snapshots(ctx context.Context, st Store) (complete, incomplete []string, err error) {
	objs, err := st.List(ctx, RebuildsPrefix)
	if err != nil {
		return nil, nil, err
	}
	has := map[string]bool{} // id -> has its manifest
	for _, o := range objs {
		id, file, ok := strings.Cut(strings.TrimPrefix(o.Key, RebuildsPrefix), "/")
		if !ok || CheckID(id) != nil {
			continue
		}
		has[id] = has[id] || file == data.ManifestFile
	}
	for id, ok := range has {
		if ok {
			complete = append(complete, id)
		} else {
			incomplete = append(incomplete, id)
		}
	}
	slices.Sort(complete)
	slices.Sort(incomplete)
	return complete, incomplete, nil
}

// Prune removes all but the newest keep complete snapshots, never the one
// `current` names, and returns the ids it removed. Each removal deletes
// manifest.json first, so a prune cut short leaves an incomplete snapshot
// that readers ignore, never a complete-looking one with files missing.
func Prune(ctx context.Context, st Store, keep int) ([]string, error) {
	if keep < 1 {
		return nil, fmt.Errorf("prune %s: keep %d: want at least 1", st, keep)
	}
	complete, _, err := Snapshots(ctx, st)
	if err != nil {
		return nil, err
	}
	cur, err := Current(ctx, st)
	if err != nil && !errors.Is(err, ErrNoSnapshot) {
		return nil, err
	}
	var removed []string
	for i, id := range complete {
		if i >= len(complete)-keep || id == cur {
			continue
		}
		if err := st.Delete(ctx, SnapshotKey(id, data.ManifestFile)); err != nil {
			return removed, err
		}
		if err := deletePrefix(ctx, st, SnapshotPrefix(id)); err != nil {
			return removed, err
		}
		removed = append(removed, id)
	}
	return removed, nil
}

// RemoveIncomplete deletes what failed or killed uploads left under
// rebuilds/ and parts/: snapshots without a manifest.json (never the one
// `current` names), a local directory's temporary files and an S3
// bucket's unfinished multipart uploads. It returns what it removed.
// Only call it while no upload runs (with the rebuild lock held): an
// upload in progress is incomplete too.
func RemoveIncomplete(ctx context.Context, st Store) ([]string, error) {
	_, incomplete, err := Snapshots(ctx, st)
	if err != nil {
		return nil, err
	}
	cur, err := Current(ctx, st)
	if err != nil && !errors.Is(err, ErrNoSnapshot) {
		return nil, err
	}
	var removed []string
	for _, id := range incomplete {
		if id == cur {
			continue
		}
		if err := deletePrefix(ctx, st, SnapshotPrefix(id)); err != nil {
			return removed, err
		}
		removed = append(removed, SnapshotPrefix(id))
	}
	for _, prefix := range []string{RebuildsPrefix, PartsPrefix} {
		var more []string
		switch s := st.(type) {
		case *Dir:
			more, err = s.removeTemp(prefix)
		case *S3:
			more, err = s.abortUploads(ctx, prefix)
		}
		removed = append(removed, more...)
		if err != nil {
			return removed, err
		}
	}
	return removed, nil
}

// deletePrefix deletes every object under prefix.
func deletePrefix(ctx context.Context, st Store, prefix string) error {
	objs, err := st.List(ctx, prefix)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := st.Delete(ctx, o.Key); err != nil {
			return err
		}
	}
	return nil
}

// Download copies the object key to the local file path, atomically (a
// temporary file beside it, synced, renamed into place), in one streamed
// GET. Readers that scan a whole file of a snapshot on S3 should download
// it first: Parquet readers reading an Object directly make one ranged
// GET per page read (332 for an 8 MB edges.parquet of a million rows).
func Download(ctx context.Context, st Store, key, path string) error {
	obj, err := st.Open(ctx, key)
	if err != nil {
		return err
	}
	defer obj.Close()
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, tempPrefix+filepath.Base(path)+"-"+rand.Text()[:10])
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return err
	}
	n, err := io.Copy(f, ctxReader{ctx, obj})
	if err == nil && n != obj.Size() {
		err = fmt.Errorf("download %s: %d bytes of %d", key, n, obj.Size())
	}
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
		return fmt.Errorf("download %s to %s: %w", key, path, err)
	}
	return atomicfile.SyncDir(dir)
}
