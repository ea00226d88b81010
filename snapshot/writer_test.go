package snapshot

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
)

// writeReference writes rows with one plain parquet-go writer and the same
// options: what the parallel fileWriter must reproduce byte for byte.
func writeReference[T any](t *testing.T, rows []T, rowGroupRows int64, extra ...parquet.WriterOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[T](&buf, writerOptions(rowGroupRows, extra)...)
	for len(rows) > 0 {
		n := min(len(rows), 37) // odd batches, as the rebuild's are not aligned to row groups
		if _, err := w.Write(rows[:n]); err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func testEdgeRows(n int) []data.EdgeRow {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	rows := make([]data.EdgeRow, n)
	for i := range rows {
		s, d := i/7, (i*7919)%(n+3)
		rows[i] = data.EdgeRow{
			Src: fmt.Sprintf("s%d.example", s), Dst: fmt.Sprintf("d%d.example", d), SrcID: int32(s), DstID: int32(d),
			FirstSeen: at.Add(time.Duration(i) * time.Second), LastSeen: at.Add(time.Duration(i) * time.Minute),
			Nofollow: i%5 == 0, Sitewide: i%11 == 0,
		}
	}
	return rows
}

func testDomainRows(n int) []data.DomainRow {
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	rows := make([]data.DomainRow, n)
	for i := range rows {
		r := &rows[i]
		r.ID, r.Domain, r.Score, r.FirstSeen = int32(i), fmt.Sprintf("x%d.example", i), 1/float64(i+1), at
		if i%3 == 0 {
			r.Rank, r.LastVisit, r.HTTPS, r.NetworkOperator = ptr(int64(i+1)), ptr(at.Add(time.Hour)), ptr(i%2 == 0), ptr("Net")
			r.MapX, r.MapY = ptr(float64(i)), ptr(-float64(i))
		}
	}
	return rows
}

// TestFileWriterSameBytes: whatever the number of encoders and however the
// rows fall into row groups, the file is byte for byte the one a single
// writer makes (row groups, pages, encodings, statistics, page index).
func TestWriterSameBytes(t *testing.T) {
	const group = 100
	for _, n := range []int{0, 1, 99, 100, 101, 250, 1000} {
		for _, workers := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("rows%d/workers%d", n, workers), func(t *testing.T) {
				dir := t.TempDir()
				edges := testEdgeRows(n)
				checkSameBytes(t, filepath.Join(dir, "e.parquet"), edges, workers, group, edgeWriterOptions...)
				domains := testDomainRows(n)
				meta := parquet.KeyValueMetadata("k", "v")
				checkSameBytes(t, filepath.Join(dir, "d.parquet"), domains, workers, group, meta)
			})
		}
	}
}

func checkSameBytes[T any](t *testing.T, path string, rows []T, workers int, group int64, extra ...parquet.WriterOption) {
	t.Helper()
	want := writeReference(t, rows, group, extra...)
	fw, err := createWorkers[T](path, group, workers, extra...)
	if err != nil {
		t.Fatal(err)
	}
	// In uneven pieces, through both Add and Write.
	for i := 0; i < len(rows); {
		n := min(len(rows)-i, 1+i%13)
		if n == 1 {
			err = fw.Add(rows[i])
		} else {
			err = fw.Write(rows[i : i+n]...)
		}
		if err != nil {
			t.Fatal(err)
		}
		i += n
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the single writer's %d", path, len(got), len(want))
	}
	back, err := readPath[T](path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(rows) {
		t.Fatalf("read back %d rows, want %d", len(back), len(rows))
	}
}

// TestFileWriterAbort: an aborted writer stops its goroutines (the race
// detector and the test's end would catch one left running).
func TestWriterAbort(t *testing.T) {
	for _, n := range []int{0, 150, 1000} {
		fw, err := createWorkers[data.EdgeRow](filepath.Join(t.TempDir(), "e.parquet"), 100, 2, edgeWriterOptions...)
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Write(testEdgeRows(n)...); err != nil {
			t.Fatal(err)
		}
		fw.Abort()
		fw.Abort() // harmless
	}
}
