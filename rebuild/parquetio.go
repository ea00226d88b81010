package rebuild

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// Row group sizes. DuckDB scans a Parquet file in parallel by row group and
// skips whole row groups by their min/max statistics, so a row group is the
// unit of both parallelism and pruning:
//   - small files (domains, schedule, visits, link words): 122,880 rows,
//     DuckDB's own row group size, so that a scan of a few million domains
//     still splits across cores and a lookup by id or time reads one group;
//   - edges: 1,048,576 rows. The file is by far the largest and sorted by
//     (src_id, dst_id), so each group covers a narrow src_id range and prunes
//     well anyway; bigger groups compress better and keep the footer small
//     for billions of edges. The writer buffers one group (~50 MB) at most.
//
// Pages also get statistics and a column index (parquet-go's defaults), which
// DuckDB uses to skip pages within a group.
const (
	smallRowGroup = 122_880
	edgeRowGroup  = 1 << 20
)

// edgeWriterOptions are edges.parquet's writer options beyond the
// encodings its row type's tags choose (see data.EdgeRow): past 8 MiB of
// dictionary in a row group, the src column falls back to plain.
var edgeWriterOptions = []parquet.WriterOption{
	parquet.DictionaryMaxBytes(8 << 20),
}

// ErrNotParquet marks a snapshot file that is not a readable Parquet file
// of the expected schema.
var ErrNotParquet = errors.New("not a valid Parquet file")

// readParquet streams the rows of the file at path to fn in batches (the
// slice is reused between calls). Errors name the file. parquet-go panics on
// some corrupt inputs and on schemas it cannot convert; both become errors
// here so that a damaged file never takes a command down.
func readParquet[T any](path string, fn func([]T) error) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", path, ErrNotParquet, r)
		}
	}()
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: %w: %v", path, ErrNotParquet, err)
	}
	want := parquet.SchemaOf(new(T))
	if err := checkColumns(want, pf.Schema()); err != nil {
		return fmt.Errorf("%s: %w: %v", path, ErrNotParquet, err)
	}
	if _, err := parquet.Convert(want, pf.Schema()); err != nil {
		return fmt.Errorf("%s: %w: unexpected schema: %v", path, ErrNotParquet, err)
	}
	r := parquet.NewGenericReader[T](pf, want)
	defer r.Close()
	buf := make([]T, 1024)
	for {
		// Cleared so that the reader allocates new values behind pointer
		// fields rather than writing into the previous batch's.
		clear(buf)
		n, rerr := r.Read(buf)
		if n > 0 {
			if err := fn(buf[:n]); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return fmt.Errorf("%s: %w: %v", path, ErrNotParquet, rerr)
		}
	}
}

// readAllParquet reads every row of a file.
func readAllParquet[T any](path string) ([]T, error) {
	var out []T
	err := readParquet(path, func(rows []T) error {
		out = append(out, rows...)
		return nil
	})
	return out, err
}

// checkColumns makes sure the file has every column the row type reads,
// with the same physical type: parquet-go would otherwise read a missing
// column as zeros, and a file of another kind as silently empty rows.
func checkColumns(want, have *parquet.Schema) error {
	for _, path := range want.Columns() {
		w, _ := want.Lookup(path...)
		h, ok := have.Lookup(path...)
		if !ok {
			return fmt.Errorf("no column %q", strings.Join(path, "."))
		}
		if wk, hk := w.Node.Type().Kind(), h.Node.Type().Kind(); wk != hk {
			return fmt.Errorf("column %q is %v, want %v", strings.Join(path, "."), hk, wk)
		}
	}
	return nil
}
