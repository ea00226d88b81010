package shard

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// leftBeside lists what a reshard left beside the store dir: its
// scratch and staging directories (.NAME.reshard-*).
func leftBeside(t *testing.T, dir string) []string {
	t.Helper()
	left, err := filepath.Glob(filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".reshard-*"))
	must(t, err)
	return left
}

// A reshard sorts each old shard through run files in a scratch directory
// beside the store (many runs with a small chunk), and removes it; a
// scratch directory a killed reshard left is removed by the next one.
func TestReshardSortsThroughRuns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := newStore(t, dir, 2)
	fillTest(t, s, 300)
	want := slices.Concat(domainsOf(t, s)...)
	must(t, s.Close())
	killed := filepath.Join(filepath.Dir(dir), ".store.reshard-sort-123")
	must(t, os.MkdirAll(killed, 0o755))
	must(t, os.WriteFile(filepath.Join(killed, "names-1.run"), []byte("left by a killed reshard"), 0o644))

	runs := map[int]int{}
	var scratches []string
	res, err := Reshard(dir, ReshardOptions{Shards: 3, SortChunk: 256, afterSort: func(k int, scratch string) {
		found, _ := filepath.Glob(filepath.Join(scratch, "*.run"))
		runs[k] = len(found)
		scratches = append(scratches, scratch)
	}})
	must(t, err)
	must(t, os.RemoveAll(res.Old))
	for k := range 2 {
		if runs[k] < 10 {
			t.Errorf("old shard %d sorted into %d runs, want many", k, runs[k])
		}
	}
	if len(scratches) == 0 || !strings.HasPrefix(filepath.Base(scratches[0]), ".store.reshard-sort-") || filepath.Dir(scratches[0]) != filepath.Dir(dir) {
		t.Errorf("sorted in %v, want .store.reshard-sort-* beside the store", scratches)
	}
	if left := leftBeside(t, dir); len(left) > 0 {
		t.Errorf("the reshard left %v", left)
	}
	s, err = Open(dir, Options{})
	must(t, err)
	defer s.Close()
	if s.Shards() != 3 {
		t.Fatalf("%d shards after a reshard to 3", s.Shards())
	}
	// Every name each old shard knew is known to some new one (a name
	// several shards know is in each).
	got := slices.Concat(domainsOf(t, s)...)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(slices.Compact(got), slices.Compact(want)) {
		t.Errorf("names after the reshard: %d, want %d", len(slices.Compact(got)), len(slices.Compact(want)))
	}
}

// A sorted run cut short or removed under the copy fails the reshard,
// which leaves the store as it was and nothing beside it, never a new
// store with fewer records.
func TestReshardDamagedRun(t *testing.T) {
	for _, damage := range []string{"cut", "removed"} {
		t.Run(damage, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "store")
			s := newStore(t, dir, 2)
			fillTest(t, s, 300)
			want := domainsOf(t, s)
			must(t, s.Close())
			_, err := Reshard(dir, ReshardOptions{Shards: 3, SortChunk: 256, afterSort: func(k int, scratch string) {
				if k != 1 {
					return
				}
				runs, _ := filepath.Glob(filepath.Join(scratch, "*.run"))
				if len(runs) < 2 {
					t.Errorf("%d runs", len(runs))
					return
				}
				victim := runs[len(runs)/2]
				if damage == "removed" {
					must(t, os.Remove(victim))
					return
				}
				b, err := os.ReadFile(victim)
				must(t, err)
				must(t, os.WriteFile(victim, b[:len(b)/2], 0o644))
			}})
			if err == nil {
				t.Fatal("a reshard over a damaged run succeeded")
			}
			if !strings.Contains(err.Error(), "shard 1") {
				t.Errorf("error %q does not name the shard", err)
			}
			if left := leftBeside(t, dir); len(left) > 0 {
				t.Errorf("the failed reshard left %v", left)
			}
			s, err = Open(dir, Options{})
			must(t, err)
			defer s.Close()
			if got := domainsOf(t, s); !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("the store after a failed reshard: %d shards, want the old %d unchanged", len(got), len(want))
			}
		})
	}
}
