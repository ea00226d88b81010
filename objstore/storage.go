package objstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// Storage is a snapshot.Storage over a Store (a directory or an S3
// bucket): what `rebuild --snapshots` publishes to, and what a removal
// rewrites there. Files are staged and read in a local directory: Publish
// uploads a finished snapshot whole (Upload: manifest.json last),
// SetCurrent moves rebuilds/current (one PUT, or a link), Open downloads
// the file in one GET and reads the local copy (removed on Close), Replace
// uploads the rewritten file over the object.
type Storage struct {
	st    Store
	local string // a local directory for staging and downloads
	ctx   context.Context
	log   *slog.Logger

	mu     sync.Mutex
	staged map[string]bool // directories Stage made
}

var _ snapshot.Storage = (*Storage)(nil)

// NewStorage makes the Storage of st, staging in the local directory
// local (made if missing). ctx bounds every call; log (nil: none) gets a
// line per uploaded file.
func NewStorage(ctx context.Context, st Store, local string, log *slog.Logger) *Storage {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Storage{st: st, local: local, ctx: ctx, log: log, staged: map[string]bool{}}
}

// Store is the store snapshots live in.
func (s *Storage) Store() Store { return s.st }

// Current returns the id rebuilds/current names, "" when none.
func (s *Storage) Current() (string, error) {
	id, err := Current(s.ctx, s.st)
	if errors.Is(err, ErrNoSnapshot) {
		return "", nil
	}
	return id, err
}

// List returns the complete snapshots, oldest first.
func (s *Storage) List() ([]string, error) {
	complete, _, err := Snapshots(s.ctx, s.st)
	return complete, err
}

// Stat says whether snapshot id is complete (fs.ErrNotExist when not).
func (s *Storage) Stat(id string) error {
	_, err := Resolve(s.ctx, s.st, id)
	if errors.Is(err, ErrIncomplete) {
		return fmt.Errorf("%w: %w", fs.ErrNotExist, err)
	}
	return err
}

// Open downloads file of snapshot id into the local directory and opens
// the copy, which Close removes.
func (s *Storage) Open(id, file string) (snapshot.File, error) {
	if err := os.MkdirAll(s.local, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(s.local, tempPrefix+"read-*")
	if err != nil {
		return nil, err
	}
	path := f.Name()
	f.Close()
	if err := Download(s.ctx, s.st, SnapshotKey(id, file), path); err != nil {
		os.Remove(path)
		return nil, err
	}
	r, err := os.Open(path)
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	fi, err := r.Stat()
	if err != nil {
		r.Close()
		os.Remove(path)
		return nil, err
	}
	return &downloaded{File: r, size: fi.Size()}, nil
}

// downloaded is a local copy of an object, removed on Close.
type downloaded struct {
	*os.File
	size int64
}

func (d *downloaded) Size() int64 { return d.size }

func (d *downloaded) Close() error {
	err := d.File.Close()
	os.Remove(d.File.Name())
	return err
}

// Location is the object's URL (s3://bucket/prefix/rebuilds/<id>/<file>)
// or path.
func (s *Storage) Location(id, file string) string {
	key := strings.TrimSuffix(RebuildsPrefix, "/")
	if id != "" {
		key = SnapshotKey(id, file)
		if file == "" {
			key = strings.TrimSuffix(SnapshotPrefix(id), "/")
		}
	}
	if d, ok := s.st.(*Dir); ok {
		return d.path(key)
	}
	return s.st.String() + "/" + key
}

// Stage makes a local directory for the files of snapshot id, refusing an
// id complete in the store already (snapshot.ErrExists).
func (s *Storage) Stage(id string) (string, error) {
	if _, err := Resolve(s.ctx, s.st, id); err == nil {
		return "", fmt.Errorf("%w: %s in %s", snapshot.ErrExists, id, s.st)
	}
	if err := os.MkdirAll(s.local, 0o755); err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp(s.local, tempPrefix+id+"-")
	if err == nil {
		s.mu.Lock()
		s.staged[dir] = true
		s.mu.Unlock()
	}
	return dir, err
}

// Publish uploads the staged snapshot (Upload: every file, checked, then
// manifest.json), then removes the staged directory if Stage made it; a
// directory staged elsewhere (a snapshot.Mirror's primary, which publishes
// the same files next) is left to its owner.
func (s *Storage) Publish(id, staged string) error {
	if err := Upload(s.ctx, s.st, id, staged, s.log); err != nil {
		return err
	}
	s.mu.Lock()
	mine := s.staged[staged]
	delete(s.staged, staged)
	s.mu.Unlock()
	if mine {
		return os.RemoveAll(staged)
	}
	return nil
}

// SetCurrent points rebuilds/current at id.
func (s *Storage) SetCurrent(id string) error { return SetCurrent(s.ctx, s.st, id) }

// Replace has fill write the new file locally and uploads it over the
// object (a PUT replaces an object whole).
func (s *Storage) Replace(id, file string, fill func(path string) (bool, error)) error {
	key := SnapshotKey(id, file)
	if _, err := s.st.Stat(s.ctx, key); err != nil {
		return err
	}
	if err := os.MkdirAll(s.local, 0o755); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(s.local, tempPrefix+"replace-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, filepath.FromSlash(file))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil { // schedule/shard=NN.parquet
		return err
	}
	keep, err := fill(path)
	if err != nil || !keep {
		return err
	}
	return PutFile(s.ctx, s.st, key, path)
}

// Remove deletes snapshot id, manifest.json first, so that one cut off is
// incomplete (ignored, and removed by RemoveIncomplete), never a complete
// one with files missing.
func (s *Storage) Remove(id string) error {
	if err := s.st.Delete(s.ctx, SnapshotKey(id, data.ManifestFile)); err != nil {
		return err
	}
	return deletePrefix(s.ctx, s.st, SnapshotPrefix(id))
}
