package rebuild

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// richSource is generatedSource with what the rebuild also writes: link
// words on the edges, visits (ok, failed), seeded domains. The same calls
// give the same source.
func richSource(t *testing.T, extra ...[2]uint32) *fakeSource {
	src := generatedSource(t, extra...)
	words := []string{"news", "blog", "river", "shop", "music"}
	for i := range src.edges {
		e := &src.edges[i]
		e.Words = []string{words[(e.SrcID+e.DstID)%5], words[e.DstID%3]}
		if e.Words[0] == e.Words[1] {
			e.Words = e.Words[:1]
		}
		e.Sitewide = (e.SrcID+e.DstID)%13 == 0
	}
	for i := range src.domains {
		d := &src.domains[i]
		switch {
		case d.ID%11 == 0:
			d.LastVisit, d.LastOutcome, d.Failures, d.RetryAt = asOf.Add(-2*day), data.OutcomeTimeout, 2, asOf.Add(day)
			src.visits = append(src.visits, data.VisitLogEntry{DomainID: d.ID, StartedAt: d.LastVisit, FinishedAt: d.LastVisit.Add(30 * time.Second),
				Outcome: data.OutcomeTimeout, Error: "timeout"})
		case d.ID%7 == 0:
			d.LastVisit, d.LastStatus, d.LastOutcome = asOf.Add(-time.Duration(d.ID%30)*day), 200, data.OutcomeOK
			d.HTTPS, d.ASN, d.NetworkOperator = bp(d.ID%2 == 0), 64500+int64(d.ID%3), "Example Net"
			src.visits = append(src.visits, data.VisitLogEntry{DomainID: d.ID, StartedAt: d.LastVisit, FinishedAt: d.LastVisit.Add(time.Minute),
				RobotsReadAt: d.LastVisit, RobotsStatus: 200, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 8, Bytes: 4096 * int64(d.ID%9)})
		case d.ID%5 == 0:
			d.Seeded = true
		}
	}
	return src
}

// TestSnapshotBytes pins the bytes of every Parquet file of two rebuilds
// (the second carries the first's ranks, map and communities over) by
// their SHA-256, in testdata/snapshot-sha256.golden: the same store and
// clock must give the same files. A change to the files' contract, their
// encoding or what a rebuild computes shows here; when it is meant, rewrite
// the golden file with -update and say why in the commit.
func TestSnapshotBytes(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i, src := range []*fakeSource{richSource(t), richSource(t, [2]uint32{3, 4}, [2]uint32{5, 800}, [2]uint32{17, 2})} {
		o := Options{DataDir: dir, Now: asOf.Add(time.Duration(i) * day), Tiers: testTiers}
		o.Rank.Workers = 2
		m, err := RunFrom(t.Context(), src, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range snapshot.ParquetFiles {
			f, err := snapshot.Local(dir).Open(m.ID, file)
			if err != nil {
				t.Fatal(err)
			}
			h := sha256.New()
			if _, err := io.Copy(h, io.NewSectionReader(f, 0, f.Size())); err != nil {
				t.Fatal(err)
			}
			f.Close()
			lines = append(lines, fmt.Sprintf("%s/%s %x %d rows", m.ID, file, h.Sum(nil), m.Counts[file]))
		}
	}
	got := strings.Join(lines, "\n") + "\n"
	checkGolden(t, "snapshot-sha256.golden", got)
}

// checkGolden compares got with testdata/name, or rewrites the file with
// -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("snapshot files differ from %s (-update rewrites it, if the change is meant):\n%s", golden, got)
	}
}
