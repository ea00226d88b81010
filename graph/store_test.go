package graph

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
	"github.com/mapthenet/mapthenet/schedule"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func openMem(t testing.TB) *Store {
	t.Helper()
	s, err := Open("", Options{Create: true, InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openDir(t testing.TB, dir string) *Store {
	t.Helper()
	s, err := Open(dir, Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dump is everything a snapshot shows, for comparing whole stores.
type dump struct {
	N        uint32
	Domains  []data.DomainState
	Edges    []data.EdgeRecord
	Visits   []data.VisitLogEntry
	Removals []Removal
}

func dumpStore(t testing.TB, s *Store) dump {
	t.Helper()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	return dumpSnapshot(t, sn)
}

func dumpSnapshot(t testing.TB, sn *Snapshot) dump {
	t.Helper()
	d := dump{N: sn.NumDomains()}
	must(t, sn.Domains(func(st *data.DomainState) error { d.Domains = append(d.Domains, *st); return nil }))
	must(t, sn.Edges(func(e *data.EdgeRecord) error { d.Edges = append(d.Edges, *e); return nil }))
	must(t, sn.Visits(func(v *data.VisitLogEntry) error { d.Visits = append(d.Visits, *v); return nil }))
	must(t, sn.Removed(func(r Removal) error { d.Removals = append(d.Removals, r); return nil }))
	return d
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func stateOf(t testing.TB, s *Store, name string) data.DomainState {
	t.Helper()
	st, ok, err := s.Domain(name)
	if err != nil || !ok {
		t.Fatalf("Domain(%q): %v, found %v", name, err, ok)
	}
	return st
}

// edgesOf lists name's out-edges as "dst" strings with flags, for tests.
func edgesOf(t testing.TB, s *Store, name string) map[string]data.EdgeRecord {
	t.Helper()
	d := dumpStore(t, s)
	names := map[uint32]string{}
	for _, st := range d.Domains {
		names[st.ID] = st.Name
	}
	out := map[string]data.EdgeRecord{}
	for _, e := range d.Edges {
		if names[e.SrcID] == name {
			out[names[e.DstID]] = e
		}
	}
	return out
}

func visit(name string, at time.Time, o data.Outcome, links ...data.Link) *data.VisitResult {
	return &data.VisitResult{
		Domain: name, StartedAt: at, FinishedAt: at.Add(time.Minute),
		RobotsReadAt: at, RobotsStatus: 200, Outcome: o, HTTPStatus: 200,
		Pages: 3, Bytes: 1000, Complete: o == data.OutcomeOK || o == data.OutcomeMoved,
		Links: links,
	}
}

func link(dst string, words ...string) data.Link { return data.Link{Dst: dst, Words: words} }

func TestOpenRecordSnapshot(t *testing.T) {
	s := openMem(t)
	must(t, s.AddDomains([]string{"a.example", "b.example"}, t0, true))
	must(t, s.RecordVisit(visit("a.example", t0.Add(time.Hour), data.OutcomeOK,
		link("www.b.example", "cats"), link("https://c.example/x", "dogs"))))

	d := dumpStore(t, s)
	if d.N != 3 || len(d.Domains) != 3 {
		t.Fatalf("NumDomains %d, %d domains; want 3, 3", d.N, len(d.Domains))
	}
	for i, name := range []string{"a.example", "b.example", "c.example"} {
		if d.Domains[i].ID != uint32(i) || d.Domains[i].Name != name {
			t.Errorf("domain %d = %d %q, want %q", i, d.Domains[i].ID, d.Domains[i].Name, name)
		}
	}
	c := d.Domains[2]
	if !c.FirstSeen.Equal(t0.Add(time.Hour)) || c.Visited() || !c.FollowedIn || c.Seeded {
		t.Errorf("new target state %+v", c)
	}
	want := []data.EdgeRecord{
		{SrcID: 0, DstID: 1, FirstSeen: t0.Add(time.Hour), LastSeen: t0.Add(time.Hour), Words: []string{"cats"}},
		{SrcID: 0, DstID: 2, FirstSeen: t0.Add(time.Hour), LastSeen: t0.Add(time.Hour), Words: []string{"dogs"}},
	}
	if !reflect.DeepEqual(d.Edges, want) {
		t.Errorf("edges\n%+v\nwant\n%+v", d.Edges, want)
	}
	if len(d.Visits) != 1 || d.Visits[0].DomainID != 0 || d.Visits[0].Outcome != data.OutcomeOK ||
		!d.Visits[0].StartedAt.Equal(t0.Add(time.Hour)) || d.Visits[0].Pages != 3 {
		t.Errorf("visits %+v", d.Visits)
	}
	a := stateOf(t, s, "a.example")
	if !a.Seeded || !a.LastVisit.Equal(t0.Add(time.Hour)) || a.LastStatus != 200 || a.LastOutcome != data.OutcomeOK {
		t.Errorf("visited state %+v", a)
	}
	if _, ok, err := s.Domain("zzz.example"); ok || err != nil {
		t.Errorf("unknown domain: found %v, %v", ok, err)
	}
	if st, ok, err := s.DomainByID(1); !ok || err != nil || st.Name != "b.example" {
		t.Errorf("DomainByID(1) = %+v, %v, %v", st, ok, err)
	}
}

func TestAddDomains(t *testing.T) {
	s := openMem(t)
	must(t, s.AddDomains([]string{"a.example", "b.example"}, t0, false))
	must(t, s.AddDomains([]string{"b.example", "c.example"}, t0.Add(time.Hour), true))
	a, b, c := stateOf(t, s, "a.example"), stateOf(t, s, "b.example"), stateOf(t, s, "c.example")
	if a.Seeded || !b.Seeded || !c.Seeded {
		t.Errorf("seeded: a %v b %v c %v", a.Seeded, b.Seeded, c.Seeded)
	}
	if !b.FirstSeen.Equal(t0) || !c.FirstSeen.Equal(t0.Add(time.Hour)) {
		t.Errorf("first seen: b %v c %v", b.FirstSeen, c.FirstSeen)
	}
	if a.ID != 0 || b.ID != 1 || c.ID != 2 {
		t.Errorf("ids %d %d %d", a.ID, b.ID, c.ID)
	}
	err := s.AddDomains([]string{"d.example", "www.e.example"}, t0, false)
	if !errors.Is(err, domain.ErrInvalidDomain) {
		t.Fatalf("non-normalised name: %v", err)
	}
	if _, ok, _ := s.Domain("d.example"); ok {
		t.Error("a refused AddDomains wrote something")
	}
}

func TestPersistence(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	must(t, s.AddDomains([]string{"a.example"}, t0, true))
	must(t, s.RecordVisit(visit("a.example", t0, data.OutcomeOK, link("b.example", "x"))))
	must(t, s.RemoveDomain("gone.example", "owner asked", "dns", t0))
	before := dumpStore(t, s)
	must(t, s.Close())
	must(t, s.Close()) // twice is harmless

	s = openDir(t, dir)
	defer s.Close()
	if after := dumpStore(t, s); !reflect.DeepEqual(before, after) {
		t.Fatalf("after reopen\n%+v\nwant\n%+v", after, before)
	}
	// Ids go on densely after a reopen.
	must(t, s.AddDomains([]string{"c.example"}, t0, false))
	if c := stateOf(t, s, "c.example"); c.ID != 2 {
		t.Errorf("id after reopen %d, want 2", c.ID)
	}
	if err := s.RecordVisit(visit("gone.example", t0, data.OutcomeOK)); !errors.Is(err, ErrRemoved) {
		t.Errorf("removed after reopen: %v", err)
	}
}

func TestOpenLocked(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	defer s.Close()
	_, err := Open(dir, Options{Create: true})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), dir) {
		t.Fatalf("second Open: %v; want ErrLocked naming %s", err, dir)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	must(t, os.WriteFile(file, []byte("x"), 0o644))
	if _, err := Open(filepath.Join(file, "store"), Options{Create: true}); err == nil {
		t.Error("Open under a regular file succeeded")
	}
}

func TestFormatVersion(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	must(t, s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(keyFormat, []byte{FormatVersion + 1})
	}))
	must(t, s.Close())
	_, err := Open(dir, Options{Create: true})
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), fmt.Sprintf("version %d", FormatVersion+1)) {
		t.Fatalf("newer format: %v", err)
	}
}

// TestFormatUpgrade: a version 1 store (FollowedIn only in f/ keys) opens,
// keeps its marks, and is marked version 2 once opened for writing.
func TestFormatUpgrade(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	must(t, s.RecordVisit(visit("a.example", t0, data.OutcomeOK, link("b.example"))))
	must(t, s.db.Update(func(txn *badger.Txn) error {
		// As version 1 wrote b: no flag in the record, an f/ key.
		var st data.DomainState
		if _, err := getStateOnly(txn, 1, &st); err != nil {
			return err
		}
		st.FollowedIn = false
		if err := txn.Set(idKey(prefixDomain, 1), encodeDomain(nil, &st, nil)); err != nil {
			return err
		}
		if err := txn.Set(idKey(prefixFollow, 1), nil); err != nil {
			return err
		}
		return txn.Set(keyFormat, []byte{1})
	}))
	must(t, s.Close())
	ro, err := Open(dir, Options{Create: true, ReadOnly: true})
	must(t, err)
	if !stateOf(t, ro, "b.example").FollowedIn || !dumpStore(t, ro).Domains[1].FollowedIn {
		t.Error("version 1 store read-only: b.example lost FollowedIn")
	}
	must(t, ro.Close())
	s = openDir(t, dir)
	defer s.Close()
	if !stateOf(t, s, "b.example").FollowedIn {
		t.Error("version 1 store: b.example lost FollowedIn")
	}
	must(t, s.db.View(func(txn *badger.Txn) error {
		item, err := txn.Get(keyFormat)
		if err != nil {
			return err
		}
		return item.Value(func(v []byte) error {
			if len(v) != 1 || v[0] != FormatVersion {
				t.Errorf("format key %v after a writable open, want %d", v, FormatVersion)
			}
			return nil
		})
	}))
}

// TestFormat2RetryTime: a format 2 store recorded the retry time of a
// failure rather than the server's Retry-After. After the upgrade that
// time still stands (the schedule does not change), until the domain's
// next visit records the facts instead.
func TestFormat2RetryTime(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	throttled := visit("a.example", t0, data.OutcomeThrottled)
	throttled.RetryAfter = 5 * time.Hour
	must(t, s.RecordVisit(throttled))
	recorded := t0.Add(5 * time.Hour)
	must(t, s.db.Update(func(txn *badger.Txn) error {
		// As version 2 wrote it: the retry time, no Retry-After.
		var st data.DomainState
		if _, err := getStateOnly(txn, 0, &st); err != nil {
			return err
		}
		st.RetryAt, st.RetryAfter = recorded, 0
		if err := txn.Set(idKey(prefixDomain, 0), encodeDomain(nil, &st, nil)); err != nil {
			return err
		}
		return txn.Set(keyFormat, []byte{2})
	}))
	must(t, s.Close())

	ro, err := Open(dir, Options{Create: true, ReadOnly: true})
	must(t, err)
	if st := stateOf(t, ro, "a.example"); !schedule.RetryAt(&st).Equal(recorded) || st.RetryAfter != 0 {
		t.Errorf("version 2 store read-only: retry at %v (Retry-After %v), want the recorded %v", schedule.RetryAt(&st), st.RetryAfter, recorded)
	}
	must(t, ro.Close())
	s = openDir(t, dir)
	defer s.Close()
	if st := stateOf(t, s, "a.example"); !schedule.RetryAt(&st).Equal(recorded) {
		t.Errorf("version 2 store upgraded: retry at %v, want the recorded %v", schedule.RetryAt(&st), recorded)
	}
	// Linked from another domain's visit: its record is rewritten with the
	// followed-in flag, and keeps the recorded time.
	must(t, s.RecordVisit(visit("b.example", t1, data.OutcomeOK, link("a.example"))))
	if st := stateOf(t, s, "a.example"); !st.FollowedIn || !schedule.RetryAt(&st).Equal(recorded) {
		t.Errorf("rewritten for a link: %+v, retry at %v, want the recorded %v", st, schedule.RetryAt(&st), recorded)
	}
	again := visit("a.example", t1, data.OutcomeThrottled)
	again.RetryAfter = 3 * time.Hour
	must(t, s.RecordVisit(again))
	st := stateOf(t, s, "a.example")
	if !st.RetryAt.IsZero() || st.RetryAfter != 3*time.Hour || st.Failures != 2 ||
		!schedule.RetryAt(&st).Equal(t1.Add(6*time.Hour)) {
		t.Errorf("visited again: %+v, retry at %v, want the facts and %v", st, schedule.RetryAt(&st), t1.Add(6*time.Hour))
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	must(t, s.AddDomains([]string{"a.example"}, t0, false))
	must(t, s.Close())
	ro, err := Open(dir, Options{Create: true, ReadOnly: true})
	must(t, err)
	defer ro.Close()
	stateOf(t, ro, "a.example")
	if err := ro.AddDomains([]string{"b.example"}, t0, false); !errors.Is(err, ErrReadOnly) {
		t.Errorf("write on read-only store: %v", err)
	}
}

func TestClosed(t *testing.T) {
	s := openMem(t)
	must(t, s.Close())
	if err := s.RecordVisit(visit("a.example", t0, data.OutcomeOK)); !errors.Is(err, ErrClosed) {
		t.Errorf("RecordVisit after Close: %v", err)
	}
}

// TestLargeBatch: a batch of a few thousand visits fits in one
// transaction; a far larger one is refused whole, with a clear error.
func TestLargeBatch(t *testing.T) {
	s := openMem(t)
	mk := func(n int) []*data.VisitResult {
		vs := make([]*data.VisitResult, n)
		for i := range vs {
			links := make([]data.Link, 10)
			for j := range links {
				links[j] = data.Link{Dst: fmt.Sprintf("t%d.example", (i*10+j)%5000), Words: []string{"news", "weather"}}
			}
			vs[i] = visit(fmt.Sprintf("s%d.example", i), t0, data.OutcomeOK, links...)
		}
		return vs
	}
	must(t, s.RecordVisits(mk(4000)))
	before := dumpStore(t, s)
	err := s.RecordVisits(mk(60000))
	var ve *VisitError
	if err == nil || !strings.Contains(err.Error(), "record fewer visits at once") || errors.As(err, &ve) {
		t.Fatalf("huge batch: %v; want a plain error, not a *VisitError", err)
	}
	if after := dumpStore(t, s); !reflect.DeepEqual(before, after) {
		t.Error("a refused batch wrote something")
	}
}
