package rebuild

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/objstore/objstoretest"
	"github.com/mapthenet/mapthenet/snapshot"
)

// killBeforeManifest is a Store that kills the server just before the
// manifest of a snapshot is uploaded: every other file has gone up.
type killBeforeManifest struct {
	objstore.Store
	srv *objstoretest.Server
}

func (k killBeforeManifest) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if filepath.Base(key) == data.ManifestFile {
		k.srv.Stop()
	}
	return k.Store.Put(ctx, key, r, size)
}

// A rebuild with a copy of its snapshots on a real S3 server (versitygw on
// loopback): the snapshot's files there, `current` a small object naming
// it; an upload cut off before the manifest leaves `current` where it was,
// there and in the data directory, and what it left is incomplete.
func TestRebuildToS3(t *testing.T) {
	srv := objstoretest.Start(t)
	ctx := t.Context()
	st := srv.Store("mapthenet", nil)
	dir := t.TempDir()
	local := snapshot.Local(dir)
	mirror := snapshot.Mirror(local, objstore.NewStorage(ctx, st, local.Location("", ""), nil))
	m, err := RunFrom(ctx, smallGraph(), Options{DataDir: dir, Now: asOf, Storage: mirror, MapTop: -1})
	if err != nil {
		t.Fatal(err)
	}
	if cur, err := objstore.Current(ctx, st); err != nil || cur != m.ID {
		t.Fatalf("current in the bucket: %q, %v; want %s", cur, err, m.ID)
	}
	for _, file := range append(slices.Clone(snapshot.ParquetFiles), data.ManifestFile) {
		path := filepath.Join(t.TempDir(), file)
		if err := objstore.Download(ctx, st, objstore.SnapshotKey(m.ID, file), path); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		want, _ := os.ReadFile(local.Location(m.ID, file))
		if !bytes.Equal(got, want) {
			t.Errorf("%s in the bucket differs from the local one", file)
		}
	}

	// The next rebuild's upload is cut off before its manifest.
	cut := snapshot.Mirror(local, objstore.NewStorage(ctx, killBeforeManifest{st, srv}, local.Location("", ""), nil))
	if _, err := RunFrom(ctx, smallGraph(), Options{DataDir: dir, Now: asOf.Add(time.Hour), Storage: cut, MapTop: -1}); err == nil {
		t.Fatal("a rebuild whose upload failed succeeded")
	}
	srv.Restart()
	if cur, err := objstore.Current(ctx, st); err != nil || cur != m.ID {
		t.Errorf("after a failed upload, current in the bucket: %q, %v; want %s still", cur, err, m.ID)
	}
	if cur, _ := local.Current(); cur != m.ID {
		t.Errorf("after a failed upload, current in the data directory: %q; want %s still", cur, m.ID)
	}
	complete, incomplete, err := objstore.Snapshots(ctx, st)
	if err != nil || !slices.Equal(complete, []string{m.ID}) || len(incomplete) != 1 {
		t.Errorf("bucket holds complete %v, incomplete %v (%v): want the first whole and the cut one incomplete", complete, incomplete, err)
	}
	// The next whole rebuild publishes, and prunes in both places.
	m3, err := RunFrom(ctx, smallGraph(), Options{DataDir: dir, Now: asOf.Add(2 * time.Hour), Storage: mirror, MapTop: -1, Keep: 1})
	if err != nil {
		t.Fatal(err)
	}
	if cur, _ := objstore.Current(ctx, st); cur != m3.ID {
		t.Errorf("current in the bucket: %q, want %s", cur, m3.ID)
	}
	if complete, _, _ := objstore.Snapshots(ctx, st); !slices.Equal(complete, []string{m3.ID}) {
		t.Errorf("after --keep 1 the bucket keeps %v", complete)
	}
}
