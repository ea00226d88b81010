package shard

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func visit(name string, at time.Time, links ...string) *data.VisitResult {
	v := &data.VisitResult{Domain: name, StartedAt: at, FinishedAt: at.Add(time.Minute), RobotsReadAt: at,
		RobotsStatus: 200, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 3, Complete: true}
	for _, l := range links {
		v.Links = append(v.Links, data.Link{Dst: l, Words: []string{"word"}})
	}
	return v
}

func newStore(t testing.TB, dir string, k int, platforms ...string) *Store {
	t.Helper()
	s, err := Open(dir, Options{Create: true, Shards: k, Platforms: platforms})
	must(t, err)
	return s
}

// domainsOf lists, per shard, the names its store knows.
func domainsOf(t testing.TB, s *Store) [][]string {
	t.Helper()
	out := make([][]string, s.Shards())
	sn, err := s.Snapshot()
	must(t, err)
	defer sn.Close()
	for i := range s.Shards() {
		names, err := sn.Shard(i).Names()
		must(t, err)
		out[i] = names
	}
	return out
}

func TestCreateRecordReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := newStore(t, dir, 4, "github.io")
	if !s.Sharded() || s.Shards() != 4 {
		t.Fatalf("sharded %v, %d shards", s.Sharded(), s.Shards())
	}
	var vs []*data.VisitResult
	for i := range 40 {
		vs = append(vs, visit(fmt.Sprintf("site%d.test", i), t0, fmt.Sprintf("site%d.test", (i+1)%40), "alice.github.io"))
	}
	must(t, s.RecordVisits(vs))
	must(t, s.AddDomains([]string{"seed.test", "bob.github.io"}, t0, true))
	// Every visited domain's record is in its own shard, visited; the
	// link targets of other shards are references there.
	for i := range 40 {
		name := fmt.Sprintf("site%d.test", i)
		own := s.ShardOf(name)
		st, ok, err := s.Shard(own).Domain(name)
		if err != nil || !ok || !st.Visited() {
			t.Fatalf("%s: not visited in its shard %d: %v %v", name, own, ok, err)
		}
		st, ok, err = s.Domain(name)
		if err != nil || !ok || !st.Visited() {
			t.Errorf("Domain(%s) through the store: %v %v", name, ok, err)
		}
	}
	if st, ok, _ := s.Domain("bob.github.io"); !ok || !st.Seeded {
		t.Errorf("the seed is not in its shard")
	}
	if s.ShardOf("alice.github.io") != s.ShardOf("bob.github.io") {
		t.Errorf("two sites of one platform in two shards")
	}
	must(t, s.Close())

	// Reopen: K from the layout; a wrong K is refused.
	if _, err := Open(dir, Options{Shards: 3}); !errors.As(err, new(*ShardsError)) {
		t.Errorf("open with --shards 3: %v, want a ShardsError", err)
	}
	s, err := Open(dir, Options{})
	must(t, err)
	defer s.Close()
	if s.Shards() != 4 {
		t.Errorf("reopened with %d shards", s.Shards())
	}
	if st, ok, _ := s.Domain("site7.test"); !ok || !st.Visited() {
		t.Errorf("site7.test lost on reopen")
	}
	// Each shard holds only its own visited domains (and references).
	sn, err := s.Snapshot()
	must(t, err)
	defer sn.Close()
	for i := range 4 {
		must(t, sn.Shard(i).Domains(func(st *data.DomainState) error {
			if st.Visited() && s.ShardOf(st.Name) != i {
				return fmt.Errorf("shard %d holds a visit of %s, whose shard is %d", i, st.Name, s.ShardOf(st.Name))
			}
			return nil
		}))
	}
}

// A store made before shards (one Badger store at store/) opens as one
// shard, unchanged, and is not turned into a sharded one by asking.
func TestPlainStoreOpensUnchanged(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	g, err := graph.Open(dir, graph.Options{Create: true})
	must(t, err)
	must(t, g.RecordVisit(visit("a.test", t0, "b.test")))
	must(t, g.Close())
	s, err := Open(dir, Options{})
	must(t, err)
	if s.Sharded() || s.Shards() != 1 || s.ShardDir(0) != dir {
		t.Errorf("plain store: sharded %v, %d shards, dir %s", s.Sharded(), s.Shards(), s.ShardDir(0))
	}
	if st, ok, _ := s.Domain("a.test"); !ok || !st.Visited() {
		t.Errorf("a.test not found")
	}
	must(t, s.Close())
	if _, err := os.Stat(filepath.Join(dir, LayoutFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("opening wrote a layout file: %v", err)
	}
	if _, err := Open(dir, Options{Create: true, Shards: 4}); !errors.As(err, new(*ShardsError)) {
		t.Errorf("a plain store opened with --shards 4: %v, want a ShardsError", err)
	}
	// No store and no Create: graph's refusal.
	if _, err := Open(filepath.Join(t.TempDir(), "none"), Options{Shards: 4}); !errors.Is(err, graph.ErrNoStore) {
		t.Errorf("no store: %v, want graph.ErrNoStore", err)
	}
}

func TestLayoutDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	must(t, newStore(t, dir, 3).Close())
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
		want   string
	}{
		{"missing shard", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "shard-01"), filepath.Join(dir, "elsewhere")))
		}, "shard 1 (" + "%s" + "/shard-01) is missing"},
		{"swapped shards", func(t *testing.T, dir string) {
			must(t, os.Rename(filepath.Join(dir, "shard-01"), filepath.Join(dir, "x")))
			must(t, os.Rename(filepath.Join(dir, "shard-02"), filepath.Join(dir, "shard-01")))
			must(t, os.Rename(filepath.Join(dir, "x"), filepath.Join(dir, "shard-02")))
		}, "says it is shard 2 of 3"},
		{"bad layout file", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, LayoutFile), []byte(`{"format": 1, "shards": 3, "hash": "md5"}`), 0o644))
		}, `routing "md5"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := filepath.Join(t.TempDir(), "store")
			must(t, os.CopyFS(d, os.DirFS(dir)))
			tc.break_(t, d)
			_, err := Open(d, Options{})
			want := tc.want
			if bytes.Contains([]byte(want), []byte("%s")) {
				want = fmt.Sprintf(want, d)
			}
			if !errors.Is(err, ErrLayout) || !bytes.Contains([]byte(err.Error()), []byte(want)) {
				t.Errorf("open: %v, want ErrLayout saying %q", err, want)
			}
		})
	}
}

// A store is made whole or not at all: a create killed half-way leaves
// only its .store.new-* directory, which the next create removes.
func TestCreateIsAtomic(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "store")
	must(t, os.MkdirAll(filepath.Join(parent, ".store.new-123", "shard-00"), 0o755))
	must(t, newStore(t, dir, 2).Close())
	entries, err := os.ReadDir(parent)
	must(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"store"}) {
		t.Errorf("after create the parent holds %q, want only the store", names)
	}
}

func TestOpenShardAndFence(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := newStore(t, dir, 4)
	a := "a.test"
	i := s.ShardOf(a)
	lost := errors.New("not ours any more")
	s.SetFence(i, func() error { return lost })
	err := s.RecordShard(i, []*data.VisitResult{visit(a, t0, "b.test")})
	if !errors.Is(err, graph.ErrFenced) {
		t.Errorf("fenced shard took a commit: %v", err)
	}
	other := (i + 1) % 4
	if err := s.RecordShard(other, []*data.VisitResult{visit(a, t0)}); !errors.As(err, new(*graph.VisitError)) {
		t.Errorf("a visit in the wrong shard: %v, want a VisitError", err)
	}
	s.SetFence(i, nil)
	must(t, s.RecordShard(i, []*data.VisitResult{visit(a, t0, "b.test")}))
	must(t, s.Close())

	g, l, err := OpenShard(dir, i, graph.Options{})
	must(t, err)
	if l.Shards != 4 {
		t.Errorf("layout says %d shards", l.Shards)
	}
	if st, ok, _ := g.Domain(a); !ok || !st.Visited() {
		t.Errorf("shard %d alone does not hold %s", i, a)
	}
	must(t, g.Close())
	if _, _, err := OpenShard(dir, 4, graph.Options{}); err == nil {
		t.Error("shard 4 of 4 opened")
	}
}
