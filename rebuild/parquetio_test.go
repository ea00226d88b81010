package rebuild

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
		rows[i] = data.VisitRow{Domain: fmt.Sprintf("d%05d.example", i), StartedAt: asOf.Add(time.Duration(i) * time.Second),
			FinishedAt: asOf, Outcome: "ok", Pages: int32(i)}
		if i%3 != 0 {
			rows[i].RobotsStatus = ptr(int32(i))
			rows[i].Error = ptr(fmt.Sprintf("e%d", i))
		}
	}
	fw, err := createParquet[data.VisitRow](path, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if err := fw.Write(rows...); err != nil {
		t.Fatal(err)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readAllParquet[data.VisitRow](path)
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
	if _, err := writeParquet(good, smallRowGroup, []data.DomainRow{{Domain: "a.example"}, {Domain: "b.example"}}); err != nil {
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
		_, err := readAllParquet[data.DomainRow](path)
		if !errors.Is(err, ErrNotParquet) || !strings.HasPrefix(err.Error(), path+": not a valid Parquet file") {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Another file's schema: edges read as schedule rows.
	edges := filepath.Join(dir, "edges.parquet")
	if _, err := writeParquet(edges, smallRowGroup, []data.EdgeRow{{Src: "a", Dst: "b"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := readAllParquet[data.ScheduleRow](edges); err == nil || !strings.Contains(err.Error(), edges) {
		t.Errorf("edges read as schedule: %v", err)
	}
	if _, err := readAllParquet[data.DomainRow](filepath.Join(dir, "missing.parquet")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

func TestSnapshotErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenSnapshot(dir, ""); !errors.Is(err, ErrNoSnapshot) || err.Error() == "" {
		t.Errorf("no rebuilds dir: %v", err)
	}
	run1(t, dir, smallGraph(), asOf)
	if _, err := OpenSnapshot(dir, "2020-01-01T000000Z"); err == nil || !strings.Contains(err.Error(), "2020-01-01T000000Z") {
		t.Errorf("unknown id: %v", err)
	}
	manifest := filepath.Join(dir, RebuildsDir, "2026-12-01T030000Z", data.ManifestFile)
	if err := os.WriteFile(manifest, []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenSnapshot(dir, ""); err == nil || !strings.Contains(err.Error(), manifest) {
		t.Errorf("bad manifest: %v", err)
	}
}

func TestLinkWordTop(t *testing.T) {
	tl := newLinkWordTally()
	// Target 1: twelve words used by 3..14 sources, and one by 2.
	for w := range 12 {
		for range 3 + w {
			tl.add(1, []string{fmt.Sprintf("w%c", 'a'+w)})
		}
	}
	tl.add(1, []string{"rare"})
	tl.add(1, []string{"rare"})
	// Target 0: a tie on sites, broken by word.
	for range 3 {
		tl.add(0, []string{"zeta", "alpha"})
	}
	var got []string
	for _, lw := range tl.top() {
		got = append(got, fmt.Sprintf("%d:%s:%d", lw.dst, lw.word, lw.sites))
	}
	want := "0:alpha:3 0:zeta:3 1:wl:14 1:wk:13 1:wj:12 1:wi:11 1:wh:10 1:wg:9 1:wf:8 1:we:7 1:wd:6 1:wc:5"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("top:\n%s\nwant\n%s", g, want)
	}
}

func TestLookup(t *testing.T) {
	dir := t.TempDir()
	src := smallGraph()
	// Twelve more visits of a: the timeline keeps the ten newest.
	for i := range 12 {
		src.visits = append(src.visits, data.VisitLogEntry{DomainID: 0, StartedAt: asOf.Add(-time.Duration(100+i) * day), Outcome: data.OutcomeOK})
	}
	run1(t, dir, src, asOf)
	s := mustOpen(t, dir, "")
	reps, err := s.Lookup([]string{"c.example", "a.example", "c.example"})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 3 || reps[0].Domain != "c.example" || reps[2].Domain != "c.example" || reps[1].Domain != "a.example" {
		t.Fatalf("reports %+v", reps)
	}
	c, a := reps[0], reps[1]
	if c.Next == nil || c.Next.Reason != "retry" || len(c.LinkWords) != 2 || len(c.Visits) != 1 || c.Move != nil {
		t.Errorf("c: %+v", c)
	}
	if len(a.Visits) != MaxTimelineVisits || !a.Visits[0].StartedAt.Equal(asOf.Add(-5*day)) || !a.Visits[1].StartedAt.Equal(asOf.Add(-15*day)) {
		t.Errorf("a's timeline: %+v", a.Visits)
	}
	if _, err := s.Lookup([]string{"a.example", "nope.example"}); !errors.Is(err, ErrUnknownDomain) || !strings.Contains(err.Error(), "nope.example") {
		t.Errorf("unknown: %v", err)
	}
	top, err := s.Top(2)
	if err != nil || len(top) != 2 || top[0].Domain != "c.example" || top[1].Domain != "a.example" {
		t.Errorf("top 2: %+v, %v", top, err)
	}
}
