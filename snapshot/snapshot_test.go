package snapshot

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
)

var testAsOf = time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)

// publish writes snapshot id into d through the Build API: the given
// domains and schedule, every other file empty, a manifest counting them;
// current moves to it when current is set.
func publish(t *testing.T, d *Dir, id string, domains []data.DomainRow, sched []data.ScheduleRow, current bool) {
	t.Helper()
	b, err := Begin(d, id)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Abort()
	counts := map[string]int64{}
	ew, err := b.CreateEdges()
	if err != nil {
		t.Fatal(err)
	}
	if err := ew.Close(); err != nil {
		t.Fatal(err)
	}
	vw, err := b.CreateVisits()
	if err != nil {
		t.Fatal(err)
	}
	if err := vw.Close(); err != nil {
		t.Fatal(err)
	}
	if counts[data.LinkWordsFile], err = b.WriteLinkWords(nil); err != nil {
		t.Fatal(err)
	}
	dw, err := b.CreateDomains("")
	if err != nil {
		t.Fatal(err)
	}
	if err := dw.Write(domains...); err != nil {
		t.Fatal(err)
	}
	if err := dw.Close(); err != nil {
		t.Fatal(err)
	}
	counts[data.DomainsFile] = dw.Rows()
	if counts[data.ScheduleFile], err = b.WriteSchedule(sched); err != nil {
		t.Fatal(err)
	}
	at, _ := ParseID(id)
	m := &data.Manifest{ID: id, AsOf: at, SchemaVersion: data.SchemaVersion, Counts: counts, Tiers: schedule.DefaultTiers, CreatedAt: at}
	if err := b.Commit(m); err != nil {
		t.Fatal(err)
	}
	if current {
		if err := d.SetCurrent(id); err != nil {
			t.Fatal(err)
		}
	}
}

// names lists a directory.
func names(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

// TestPublish: a published snapshot reads back through Open; `current` is
// a relative symlink that moves in one step; while being built, a
// snapshot is only a .tmp- entry; what an abort leaves is nothing.
func TestPublish(t *testing.T) {
	dataDir := t.TempDir()
	d := Local(dataDir)
	root := filepath.Join(dataDir, DirName)
	if cur, err := d.Current(); err != nil || cur != "" {
		t.Fatalf("current of nothing: %q, %v", cur, err)
	}
	if ids, err := d.List(); err != nil || ids != nil {
		t.Fatalf("list of nothing: %q, %v", ids, err)
	}
	id := ID(testAsOf)
	rows := []data.DomainRow{{ID: 0, Domain: "a.example"}, {ID: 1, Domain: "b.example"}}
	publish(t, d, id, rows, []data.ScheduleRow{{Domain: "a.example", NextVisit: testAsOf}}, true)

	if target, err := os.Readlink(filepath.Join(root, CurrentName)); err != nil || target != id {
		t.Errorf("current → %q, %v; want the relative %q", target, err, id)
	}
	s, err := Open(dataDir, "")
	if err != nil {
		t.Fatal(err)
	}
	if s.ID != id || s.Manifest.Counts[data.DomainsFile] != 2 || s.Location(data.DomainsFile) != filepath.Join(root, id, data.DomainsFile) {
		t.Errorf("opened %s, manifest %+v, at %s", s.ID, s.Manifest, s.Location(data.DomainsFile))
	}
	got, err := s.Domains()
	if err != nil || len(got) != 2 || got[1].Domain != "b.example" {
		t.Errorf("domains %+v, %v", got, err)
	}

	// Being built: only a .tmp- entry; an abort leaves nothing.
	later := ID(testAsOf.Add(time.Hour))
	b, err := Begin(d, later)
	if err != nil {
		t.Fatal(err)
	}
	during := names(t, root)
	if len(during) != 3 || !strings.HasPrefix(during[0], tempPrefix+later+"-") {
		t.Errorf("while building: %q", during)
	}
	if ids, _ := d.List(); !slices.Equal(ids, []string{id}) {
		t.Errorf("list while building: %q", ids)
	}
	b.Abort()
	b.Abort()
	if after := names(t, root); !slices.Equal(after, []string{id, CurrentName}) {
		t.Errorf("after an abort: %q", after)
	}

	// A second snapshot: an open Snapshot keeps reading the first.
	publish(t, d, later, rows[:1], nil, true)
	if got, err := s.Domains(); err != nil || len(got) != 2 {
		t.Errorf("the first snapshot, after current moved: %d rows, %v", len(got), err)
	}
	if s2, err := Open(dataDir, ""); err != nil || s2.ID != later {
		t.Errorf("current is %v, %v; want %s", s2, err, later)
	}
	if _, err := Begin(d, later); !errors.Is(err, ErrExists) || !strings.Contains(err.Error(), later) {
		t.Errorf("a second %s: %v", later, err)
	}
	if _, err := Begin(d, "latest"); err == nil {
		t.Error("began a snapshot of id latest")
	}
	b, _ = Begin(d, ID(testAsOf.Add(2*time.Hour)))
	defer b.Abort()
	if err := b.Commit(&data.Manifest{ID: "other", SchemaVersion: data.SchemaVersion}); err == nil {
		t.Error("committed a manifest of another id")
	}
	if err := b.Commit(&data.Manifest{ID: b.ID(), SchemaVersion: data.SchemaVersion + 1}); err == nil {
		t.Error("committed a manifest of another schema version")
	}
}

func TestOpenErrors(t *testing.T) {
	dataDir := t.TempDir()
	if _, err := Open(dataDir, ""); !errors.Is(err, ErrNoSnapshot) || err.Error() == "" {
		t.Errorf("no rebuilds dir: %v", err)
	}
	d := Local(dataDir)
	id := ID(testAsOf)
	publish(t, d, id, nil, nil, true)
	if _, err := Open(dataDir, "2020-01-01T000000Z"); err == nil || !strings.Contains(err.Error(), "2020-01-01T000000Z") {
		t.Errorf("unknown id: %v", err)
	}
	manifest := d.Location(id, data.ManifestFile)
	if err := os.WriteFile(manifest, []byte(`{"schema_version": 0}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dataDir, ""); err == nil || !strings.Contains(err.Error(), "schema version 0") {
		t.Errorf("old schema: %v", err)
	}
	if m, err := ReadManifest(d, id); err != nil || m.SchemaVersion != 0 {
		t.Errorf("ReadManifest of an old schema: %+v, %v", m, err)
	}
	if err := os.WriteFile(manifest, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dataDir, ""); err == nil || !strings.Contains(err.Error(), manifest) {
		t.Errorf("bad manifest: %v", err)
	}
}

// TestLock: one holder at a time; LockWait gives up when its context ends.
func TestLock(t *testing.T) {
	d := Local(t.TempDir())
	release, err := d.Lock()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Lock(); !errors.Is(err, ErrBusy) || !strings.Contains(err.Error(), "another rebuild is running") {
		t.Errorf("second lock: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := d.LockWait(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("waiting: %v", err)
	}
	release()
	again, err := d.Lock()
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	again()
}

// TestCleanStale: what killed processes left (a staged snapshot, a
// temporary symlink, a half-removed snapshot) goes; snapshots stay.
func TestCleanStale(t *testing.T) {
	dataDir := t.TempDir()
	d := Local(dataDir)
	id := ID(testAsOf)
	publish(t, d, id, nil, nil, true)
	staged, err := d.Stage(ID(testAsOf.Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(staged, data.EdgesFile), []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dataDir, DirName)
	if err := os.Symlink(id, filepath.Join(root, tempPrefix+"current-"+id)); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, tempPrefix+"old-2026-11-01T000000Z"), 0o755); err != nil {
		t.Fatal(err)
	}
	removed, err := d.CleanStale()
	if err != nil || len(removed) != 3 {
		t.Errorf("removed %q, %v", removed, err)
	}
	if got := names(t, root); !slices.Equal(got, []string{id, CurrentName}) {
		t.Errorf("left %q", got)
	}
}

// TestPrune keeps the newest and never the current one.
func TestPrune(t *testing.T) {
	dataDir := t.TempDir()
	d := Local(dataDir)
	var ids []string
	for i := range 4 {
		id := ID(testAsOf.Add(time.Duration(i) * time.Hour))
		ids = append(ids, id)
		publish(t, d, id, nil, nil, i == 0) // the oldest is current
	}
	removed, err := Prune(d, 2)
	if err != nil || !slices.Equal(removed, ids[1:2]) {
		t.Errorf("pruned %q, %v; want %q", removed, err, ids[1:2])
	}
	if got, _ := d.List(); !slices.Equal(got, []string{ids[0], ids[2], ids[3]}) {
		t.Errorf("kept %q", got)
	}
}

// TestPurgeWaitsForRebuild: a purge waits for the rebuild lock (a rebuild
// in progress may write the domain) and gives up when its context ends.
func TestPurgeWaitsForRebuild(t *testing.T) {
	dir := t.TempDir()
	release, err := Local(dir).Lock()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := PurgeDomain(ctx, dir, "bad.example"); err == nil {
		t.Fatal("purged while a rebuild held the lock")
	}
}

// TestReplace: a file is replaced whole, keeping its mode; a fill that
// fails or declines leaves the old file and no temporary one; a missing
// file is fs.ErrNotExist.
func TestReplace(t *testing.T) {
	dataDir := t.TempDir()
	d := Local(dataDir)
	id := ID(testAsOf)
	publish(t, d, id, []data.DomainRow{{Domain: "a.example"}}, nil, true)
	path := d.Location(id, data.DomainsFile)
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	errFill := errors.New("fill failed")
	for name, fill := range map[string]func(string) (bool, error){
		"declined": func(tmp string) (bool, error) { return false, os.WriteFile(tmp, []byte("x"), 0o644) },
		"failed":   func(tmp string) (bool, error) { os.WriteFile(tmp, []byte("x"), 0o644); return true, errFill },
	} {
		err := d.Replace(id, data.DomainsFile, fill)
		if after, _ := os.ReadFile(path); string(after) != string(before) || (name == "failed") != errors.Is(err, errFill) {
			t.Errorf("%s: %v, file changed %v", name, err, string(after) != string(before))
		}
	}
	err := d.Replace(id, data.DomainsFile, func(tmp string) (bool, error) { return true, os.WriteFile(tmp, []byte("new"), 0o644) })
	if err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(path); string(after) != "new" {
		t.Errorf("replaced: %q", after)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o640 {
		t.Errorf("mode %o, want the old file's 640", st.Mode().Perm())
	}
	if got := names(t, d.Location(id, "")); slices.ContainsFunc(got, func(n string) bool { return strings.HasPrefix(n, tempPrefix) }) {
		t.Errorf("left %q", got)
	}
	called := false
	err = d.Replace(id, "nope.parquet", func(string) (bool, error) { called = true; return true, nil })
	if !errors.Is(err, fs.ErrNotExist) || called {
		t.Errorf("a missing file: %v, fill called %v", err, called)
	}
}
