package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// TestParquetRoundTrip writes more rows than one read batch (and more than
// one row group) with nullable columns and reads them back: values behind
// pointers must not be shared between batches.
func TestParquetRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "v.parquet")
	const n = 3000
	rows := make([]data.VisitRow, n)
	for i := range rows {
		rows[i] = data.VisitRow{Domain: fmt.Sprintf("d%05d.example", i), StartedAt: testAsOf.Add(time.Duration(i) * time.Second),
			FinishedAt: testAsOf, Outcome: "ok", Pages: int32(i)}
		if i%3 != 0 {
			rows[i].RobotsStatus = ptr(int32(i))
			rows[i].Error = ptr(fmt.Sprintf("e%d", i))
		}
	}
	fw, err := create[data.VisitRow](path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rows...); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readPath[data.VisitRow](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d rows back, want %d", len(got), n)
	}
	for i, r := range got {
		w := rows[i]
		if r.Domain != w.Domain || !r.StartedAt.Equal(w.StartedAt) || r.Pages != w.Pages ||
			(r.RobotsStatus == nil) != (w.RobotsStatus == nil) || (r.RobotsStatus != nil && *r.RobotsStatus != *w.RobotsStatus) ||
			(r.Error == nil) != (w.Error == nil) || (r.Error != nil && *r.Error != *w.Error) {
			t.Fatalf("row %d: %+v, want %+v", i, r, w)
		}
	}
}

// TestReadDamaged: a file cut off mid-write, garbage, a missing file and a
// file of another schema each give an error naming the file, no panic.
func TestReadDamaged(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.parquet")
	if _, err := writeAll(good, smallRowGroup, []data.DomainRow{{Domain: "a.example"}, {Domain: "b.example"}}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"truncated.parquet": raw[:len(raw)/2],
		"garbage.parquet":   []byte("PAR1 not really PAR1"),
		"empty.parquet":     nil,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name := range files {
		path := filepath.Join(dir, name)
		_, err := readPath[data.DomainRow](path)
		if !errors.Is(err, ErrNotParquet) || !strings.HasPrefix(err.Error(), path+": not a valid Parquet file") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Another file's schema: edges read as schedule rows.
	edges := filepath.Join(dir, "edges.parquet")
	if _, err := writeAll(edges, smallRowGroup, []data.EdgeRow{{Src: "a", Dst: "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := readPath[data.ScheduleRow](edges); err == nil || !strings.Contains(err.Error(), edges) {
		t.Errorf("edges read as schedule: %v", err)
	}
	if _, err := readPath[data.DomainRow](filepath.Join(dir, "missing.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// readPath reads every row of the Parquet file at path.
func readPath[T any](path string) ([]T, error) {
	f, err := openPath(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []T
	err = readParquet(f, path, func(rows []T) error {
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// openPath opens the file at path as Dir.Open does.
func openPath(path string) (File, error) {
	d := &Dir{root: filepath.Dir(filepath.Dir(path))}
	return d.Open(filepath.Base(filepath.Dir(path)), filepath.Base(path))
}

// FuzzReadFiles: whatever bytes a snapshot file holds, its readers return
// rows or an error, never panic (DESIGN.md: a damaged file is a clear
// error). The seeds are a valid domains.parquet and cuts of it.
func FuzzReadFiles(f *testing.F) {
	dir := f.TempDir()
	good := filepath.Join(dir, "seed.parquet")
	rows := []data.DomainRow{{ID: 0, Domain: "a.example", Rank: ptr(int64(1)), MapX: ptr(1.0), MapY: ptr(2.0), Community: ptr(int32(3))}, {ID: 1, Domain: "b.example"}}
	if _, err := writeAll(good, smallRowGroup, rows); err != nil {
		f.Fatal(err)
	}
	raw, err := os.ReadFile(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(raw[:len(raw)-10])
	f.Add(raw[len(raw)/2:])
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), data.DomainsFile)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		readPath[data.DomainRow](path)
		readPath[data.ScheduleRow](path)
		readMapPositionsAt(path, func([]byte) int64 { return 0 }, func(int64, float64, float64) {})
		readCommunitiesAt(path, func(int32, []byte) int32 { return 0 }, func(int32, int32) {})
	})
}
