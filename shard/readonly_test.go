package shard

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
)

// inShard is a domain name that shard i of s holds.
func inShard(t *testing.T, s *Store, i int, tag string) string {
	t.Helper()
	for n := range 10_000 {
		if d := fmt.Sprintf("%s%d.test", tag, n); s.ShardOf(d) == i {
			return d
		}
	}
	t.Fatalf("no name of shard %d", i)
	return ""
}

// A store opened with ReadOnlyShards writes none of its shards until
// SetWritable opens one; the shard's fence stays with it across the
// reopens, what it wrote is there read-only after, and a write to a
// read-only shard whose fence refuses fails with the fence's error.
func TestReadOnlyShards(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir, Options{Create: true, Shards: 4, ReadOnlyShards: true})
	must(t, err)
	defer s.Close()
	for i := range 4 {
		if s.Writable(i) {
			t.Errorf("shard %d is writable after an open with ReadOnlyShards", i)
		}
	}
	a := inShard(t, s, 1, "a")
	if err := s.RecordShard(1, []*data.VisitResult{visit(a, t0)}); !errors.Is(err, graph.ErrReadOnly) {
		t.Errorf("a write to a read-only shard without a fence: %v, want graph.ErrReadOnly", err)
	}
	notHeld := errors.New("shard 1 is not held")
	s.SetFence(1, func() error { return notHeld })
	if err := s.RecordShard(1, []*data.VisitResult{visit(a, t0)}); !errors.Is(err, graph.ErrFenced) || !errors.Is(err, notHeld) {
		t.Errorf("a write to a read-only shard whose fence refuses: %v, want graph.ErrFenced wrapping the fence's error", err)
	}

	must(t, s.SetWritable(1, true))
	must(t, s.SetWritable(1, true)) // already: nothing
	if !s.Writable(1) || s.Writable(0) {
		t.Errorf("writable: shard 1 %v, shard 0 %v; want only shard 1", s.Writable(1), s.Writable(0))
	}
	if err := s.RecordShard(1, []*data.VisitResult{visit(a, t0)}); !errors.Is(err, graph.ErrFenced) {
		t.Errorf("the fence did not carry over to the writable shard: %v", err)
	}
	s.SetFence(1, nil)
	must(t, s.RecordShard(1, []*data.VisitResult{visit(a, t0, "b.test")}))
	s.SetFence(1, func() error { return notHeld })
	must(t, s.SetWritable(1, false))
	if s.Writable(1) {
		t.Error("shard 1 still writable after SetWritable(false)")
	}
	if err := s.RecordShard(1, []*data.VisitResult{visit(a, t0)}); !errors.Is(err, graph.ErrFenced) {
		t.Errorf("a write to the shard given back: %v, want graph.ErrFenced", err)
	}
	if st, ok, err := s.Domain(a); err != nil || !ok || !st.Visited() {
		t.Errorf("%s read-only after its visit: found %v, %v", a, ok, err)
	}
	if err := s.SetWritable(4, true); err == nil {
		t.Error("SetWritable of shard 4 of 4 succeeded")
	}
	// Another process may not open the store for writing meanwhile.
	if _, err := Open(dir, Options{}); !errors.Is(err, graph.ErrLocked) {
		t.Errorf("a writable open beside a store with read-only shards: %v, want graph.ErrLocked", err)
	}
}

// A shard a killed process left (its write-ahead log not cut: Badger
// cannot open it read-only) opens with ReadOnlyShards all the same, with
// what was committed to it.
func TestReadOnlyShardsOpenAKilledStore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := newStore(t, dir, 2)
	a := inShard(t, s, 0, "a")
	must(t, s.RecordShard(0, []*data.VisitResult{visit(a, t0, "b.test")}))
	// The files as a kill -9 leaves them: copied while the store is open.
	killed := filepath.Join(t.TempDir(), "store")
	must(t, copyDir(dir, killed))
	must(t, s.Close())
	if g, _, err := OpenShard(killed, 0, graph.Options{ReadOnly: true}); err == nil {
		g.Close()
		t.Fatal("the copy of the open store opens read-only as it is: it is not what a kill leaves")
	}
	k, err := Open(killed, Options{ReadOnlyShards: true})
	must(t, err)
	defer k.Close()
	if k.Writable(0) {
		t.Error("shard 0 is writable")
	}
	if st, ok, err := k.Domain(a); err != nil || !ok || !st.Visited() {
		t.Errorf("%s after the read-only open of the killed store: found %v, %v", a, ok, err)
	}
}

// copyDir copies the regular files of the tree src to dst, keeping the
// holes of sparse ones (a preallocated log is mostly a hole: copied
// whole, a shard's is gigabytes of zeros).
func copyDir(src, dst string) error {
	return filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if info.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		return copySparse(path, to, info.Size())
	})
}

func copySparse(from, to string, size int64) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	defer out.Close()
	for off := int64(0); off < size; {
		data, err := unix.Seek(int(in.Fd()), off, unix.SEEK_DATA)
		if errors.Is(err, unix.ENXIO) {
			break // only a hole is left
		}
		if err != nil {
			return err
		}
		hole, err := unix.Seek(int(in.Fd()), data, unix.SEEK_HOLE)
		if err != nil {
			return err
		}
		if _, err := io.Copy(io.NewOffsetWriter(out, data), io.NewSectionReader(in, data, hole-data)); err != nil {
			return err
		}
		off = hole
	}
	return out.Truncate(size)
}

// CloseShard leaves a shard closed: what was written to it is on disk,
// its reads and writes fail with graph.ErrClosed (or its fence's error),
// SetWritable opens it again either way, and the store's Close is fine
// with it.
func TestCloseShard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir, Options{Create: true, Shards: 4, ReadOnlyShards: true})
	must(t, err)
	a := inShard(t, s, 2, "a")
	must(t, s.SetWritable(2, true))
	must(t, s.RecordShard(2, []*data.VisitResult{visit(a, t0, "b.test")}))
	must(t, s.CloseShard(2))
	if s.Writable(2) {
		t.Error("shard 2 writable after CloseShard")
	}
	if _, _, err := s.Domain(a); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("a read of a closed shard: %v, want graph.ErrClosed", err)
	}
	if err := s.RecordShard(2, []*data.VisitResult{visit(a, t0)}); !errors.Is(err, graph.ErrClosed) {
		t.Errorf("a write to a closed shard: %v, want graph.ErrClosed", err)
	}
	must(t, s.SetWritable(2, false)) // read-only, as it was before it was taken
	if st, ok, err := s.Domain(a); err != nil || !ok || !st.Visited() {
		t.Errorf("%s after CloseShard and a read-only open: found %v, %v", a, ok, err)
	}
	must(t, s.CloseShard(2))
	must(t, s.SetWritable(2, true))
	must(t, s.RecordShard(2, []*data.VisitResult{visit(a, t0.Add(time.Hour))}))
	must(t, s.CloseShard(2))
	must(t, s.Close())
	s, err = Open(dir, Options{})
	must(t, err)
	defer s.Close()
	if st, ok, err := s.Domain(a); err != nil || !ok || !st.LastVisit.Equal(t0.Add(time.Hour)) {
		t.Errorf("%s after a reopen: found %v, last visit %v, %v; want the second visit's", a, ok, st.LastVisit, err)
	}
}

// A shard a store of ReadOnlyShards opened for writing keeps its level-0
// tables when SetWritable closes it (graph.GCOptions.NoCloseCompaction):
// the make's table and the give-up's flush are both there, not compacted
// into one.
func TestGiveUpLeavesLevelZero(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Open(dir, Options{Create: true, Shards: 2, ReadOnlyShards: true})
	must(t, err)
	defer s.Close()
	a := inShard(t, s, 1, "a")
	must(t, s.SetWritable(1, true))
	must(t, s.RecordShard(1, []*data.VisitResult{visit(a, t0, "b.test")}))
	must(t, s.SetWritable(1, false))
	tables, err := filepath.Glob(filepath.Join(dir, ShardDir(1), "*.sst"))
	must(t, err)
	if len(tables) != 2 {
		t.Errorf("%d tables in the shard given up, want 2 (its mark's and the flush's, not compacted): %v", len(tables), tables)
	}
}
