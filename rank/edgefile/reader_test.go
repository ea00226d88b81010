package edgefile

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// TestReadRowByRow: Read's edges are the file's followed rows, in file
// order, for any readers, plain or dictionary-encoded names. The file
// is long runs of the same names, zstd-compressed, so that it holds
// many more rows than its size makes plausible (Read's first guess at
// the edge arrays) and the arrays grow while the readers fill them.
func TestReadRowByRow(t *testing.T) {
	type plainRow struct {
		Src      string `parquet:"src"`
		Dst      string `parquet:"dst"`
		Nofollow bool   `parquet:"nofollow"`
	}
	type dictRow struct {
		Src      string `parquet:"src,dict"`
		Dst      string `parquet:"dst,dict"`
		Nofollow bool   `parquet:"nofollow"`
	}
	const rows = 300_000
	want := make([]plainRow, rows)
	for i := range want {
		r := &want[i]
		r.Src = fmt.Sprintf("s%d.example.com", i/25_000)
		r.Dst = fmt.Sprintf("d%d.com", (i/7_000)%9)
		if (i/11_000)%5 == 0 {
			r.Dst = r.Src // a self-loop: no edge
		}
		r.Nofollow = (i/13_000)%4 == 1
	}
	dict := make([]dictRow, rows)
	for i, r := range want {
		dict[i] = dictRow(r)
	}
	dir := t.TempDir()
	files := map[string]string{"plain": filepath.Join(dir, "plain.parquet"), "dict": filepath.Join(dir, "dict.parquet")}
	writeZstd(t, files["plain"], want)
	writeZstd(t, files["dict"], dict)
	for enc, path := range files {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if guess := 16*fi.Size() + 1<<16; guess >= rows {
			t.Fatalf("%s: %d bytes: Read's first guess at the rows (%d) is not below the rows", enc, fi.Size(), guess)
		}
		for _, workers := range []int{1, 3} {
			el, err := Read(context.Background(), path, ReadOptions{Workers: workers})
			if err != nil {
				t.Fatalf("%s, %d workers: %v", enc, workers, err)
			}
			name, src := el.Names.Name, sourcesOf(el.Runs)
			k := 0
			for i, r := range want {
				if r.Nofollow || r.Src == r.Dst {
					continue
				}
				if k >= len(src) {
					t.Fatalf("%s, %d workers: %d edges, want more", enc, workers, len(src))
				}
				if s, d := name(src[k]), name(el.Dst[k]); s != r.Src || d != r.Dst {
					t.Fatalf("%s, %d workers: edge %d (row %d) is %s -> %s, want %s -> %s", enc, workers, k, i, s, d, r.Src, r.Dst)
				}
				k++
			}
			if k != len(src) || el.Rows != rows {
				t.Errorf("%s, %d workers: %d edges of %d rows, want %d of %d", enc, workers, len(src), el.Rows, k, rows)
			}
		}
	}
}

// writeZstd writes rows to path, zstd-compressed, in row groups of
// 100,000 rows.
func writeZstd[T any](t *testing.T, path string, rows []T) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[T](f, parquet.Compression(&zstd.Codec{}), parquet.MaxRowsPerRowGroup(100_000))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestReadSourceRuns: sources are looked up once a run of equal names;
// runs of every length from 1 up, names that come back after others, and
// runs across the lookups' windows and pages all get their own name's id.
func TestReadSourceRuns(t *testing.T) {
	type row struct {
		Src string `parquet:"src"`
		Dst string `parquet:"dst"`
	}
	const rows = 50_000
	want := make([]row, 0, rows)
	for run := 0; len(want) < rows; run++ {
		src := fmt.Sprintf("s%d.example", (run*7919)%1301) // back after other names
		for range 1 + (run*13)%37 {
			want = append(want, row{src, fmt.Sprintf("d%d.example", len(want)%977)})
		}
	}
	path := filepath.Join(t.TempDir(), "runs.parquet")
	writeZstd(t, path, want)
	for _, workers := range []int{1, 2} {
		el, err := Read(context.Background(), path, ReadOptions{Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		name, src := el.Names.Name, sourcesOf(el.Runs)
		if len(src) != len(want) {
			t.Fatalf("%d workers: %d edges, want %d", workers, len(src), len(want))
		}
		for i, r := range want {
			if s, d := name(src[i]), name(el.Dst[i]); s != r.Src || d != r.Dst {
				t.Fatalf("%d workers: row %d is %s -> %s, want %s -> %s", workers, i, s, d, r.Src, r.Dst)
			}
		}
	}
}
