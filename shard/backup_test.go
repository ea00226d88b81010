package shard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
)

func fillTest(t *testing.T, s *Store, n int) {
	t.Helper()
	var vs []*data.VisitResult
	for i := range n {
		vs = append(vs, visit(fmt.Sprintf("d%d.test", i), t0, fmt.Sprintf("d%d.test", (i+1)%n), fmt.Sprintf("d%d.test", (i+7)%n)))
	}
	must(t, s.RecordVisits(vs))
	must(t, s.RemoveDomain("d3.test", "asked", "dns", t0))
}

func TestBackupRestore(t *testing.T) {
	for _, k := range []int{1, 3} {
		t.Run(fmt.Sprintf("K=%d", k), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s := newStore(t, dir, k)
			fillTest(t, s, 30)
			want := domainsOf(t, s)
			var buf bytes.Buffer
			must(t, s.Backup(&buf, t.TempDir()))
			must(t, s.Close())
			if isTar(buf.Bytes()) != (k > 1) {
				t.Errorf("K=%d: backup is tar %v", k, isTar(buf.Bytes()))
			}

			other := filepath.Join(t.TempDir(), "store")
			must(t, Restore(other, bytes.NewReader(buf.Bytes()), nil))
			r, err := Open(other, Options{})
			must(t, err)
			defer r.Close()
			if r.Shards() != k {
				t.Errorf("restored %d shards", r.Shards())
			}
			if got := domainsOf(t, r); !reflect.DeepEqual(got, want) {
				t.Errorf("restored names %v, want %v", got, want)
			}
			if removed, _ := r.IsRemoved("d3.test"); !removed {
				t.Error("the removal list was not restored")
			}
			// Never into a store.
			if err := Restore(other, bytes.NewReader(buf.Bytes()), nil); !errors.Is(err, graph.ErrNotEmpty) {
				t.Errorf("restore over a store: %v", err)
			}
			if k == 1 {
				return
			}
			// A backup cut short restores nothing.
			cut := filepath.Join(t.TempDir(), "store")
			err = Restore(cut, bytes.NewReader(buf.Bytes()[:buf.Len()*2/3]), nil)
			if err == nil {
				t.Fatal("a cut backup restored")
			}
			if _, serr := os.Stat(cut); !errors.Is(serr, os.ErrNotExist) {
				t.Errorf("a failed restore left %s (%v)", cut, err)
			}
			entries, _ := os.ReadDir(filepath.Dir(cut))
			if len(entries) != 0 {
				t.Errorf("a failed restore left %v", entries)
			}
		})
	}
}

// RestoreShard: a fleet node takes one shard from its backup.
func TestRestoreShard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := newStore(t, dir, 3)
	fillTest(t, s, 30)
	want := domainsOf(t, s)
	var one bytes.Buffer
	_, err := s.Shard(2).Backup(&one)
	must(t, err)
	var wrong bytes.Buffer
	_, err = s.Shard(1).Backup(&wrong)
	must(t, err)
	must(t, s.Close())
	must(t, os.RemoveAll(filepath.Join(dir, ShardDir(2))))
	if err := RestoreShard(dir, 2, bytes.NewReader(wrong.Bytes()), nil); !errors.Is(err, ErrLayout) {
		t.Errorf("shard 1's backup restored as shard 2: %v", err)
	}
	must(t, RestoreShard(dir, 2, bytes.NewReader(one.Bytes()), nil))
	r, err := Open(dir, Options{})
	must(t, err)
	defer r.Close()
	if got := domainsOf(t, r); !reflect.DeepEqual(got, want) {
		t.Errorf("after restoring shard 2: %v, want %v", got, want)
	}
}

func TestVerifyNamesShard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := newStore(t, dir, 3)
	fillTest(t, s, 30)
	must(t, s.Close())
	rep, err := Verify(dir, nil)
	must(t, err)
	if !rep.OK() || rep.Records["domains"] == 0 {
		t.Fatalf("a sound store: %+v", rep)
	}
	// Damage one table of shard 1.
	tables, _ := filepath.Glob(filepath.Join(dir, ShardDir(1), "*.sst"))
	if len(tables) == 0 {
		t.Fatal("shard 1 has no table")
	}
	b, err := os.ReadFile(tables[0])
	must(t, err)
	b[len(b)/3] ^= 0xff
	must(t, os.WriteFile(tables[0], b, 0o644))
	must(t, os.RemoveAll(filepath.Join(dir, ShardDir(2))))
	rep, err = Verify(dir, nil)
	must(t, err)
	var files []string
	for _, d := range rep.Damage {
		files = append(files, d.File)
	}
	if len(files) != 2 || !strings.HasPrefix(files[0], filepath.Join(dir, ShardDir(1))+"/") || files[1] != filepath.Join(dir, ShardDir(2)) {
		t.Errorf("damage named %q, want shard-01's table and shard-02", files)
	}
}

// ReplaceShard: an open store takes one shard from a backup (a fleet node
// taking a shard another node held); a backup of another shard is refused
// and the old copy stays.
func TestReplaceShard(t *testing.T) {
	src := newStore(t, filepath.Join(t.TempDir(), "store"), 3)
	fillTest(t, src, 30)
	want := domainsOf(t, src)
	var one, wrong bytes.Buffer
	_, err := src.Shard(2).Backup(&one)
	must(t, err)
	_, err = src.Shard(1).Backup(&wrong)
	must(t, err)
	must(t, src.Close())

	dir := filepath.Join(t.TempDir(), "store")
	s := newStore(t, dir, 3)
	defer s.Close()
	fillTest(t, s, 10) // an older copy of the same store
	before := domainsOf(t, s)
	if err := s.ReplaceShard(2, bytes.NewReader(wrong.Bytes()), int64(wrong.Len()), nil); !errors.Is(err, ErrLayout) {
		t.Errorf("shard 1's backup replaced shard 2: %v", err)
	}
	if got := domainsOf(t, s); !reflect.DeepEqual(got, before) {
		t.Errorf("a refused replace changed the store: %v, want %v", got, before)
	}
	must(t, s.ReplaceShard(2, bytes.NewReader(one.Bytes()), int64(one.Len()), nil))
	got := domainsOf(t, s)
	if !reflect.DeepEqual(got[2], want[2]) || !reflect.DeepEqual(got[1], before[1]) {
		t.Errorf("after the replace: %v, want shard 2 %v and shard 1 %v", got, want[2], before[1])
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// A backup is loaded through a memtable sized to it: never more than the
// shard's own, never less than 1 MiB, the shard's own when its size is
// not known.
func TestRestoreMemTable(t *testing.T) {
	shard := graph.Options{MemTableSize: 16 << 20}
	for _, tc := range []struct {
		size int64
		o    graph.Options
		want int64
	}{
		{4 << 10, shard, 1 << 20},
		{1 << 20, shard, 4 << 20},
		{100 << 20, shard, 16 << 20},
		{-1, shard, 16 << 20},
		{-1, graph.Options{}, 64 << 20},
		{0, graph.Options{}, 1 << 20},
	} {
		if got := restoreMemTable(tc.size, tc.o); got != tc.want {
			t.Errorf("restoreMemTable(%d, memtable %d) = %d, want %d", tc.size, tc.o.MemTableSize, got, tc.want)
		}
	}
}
