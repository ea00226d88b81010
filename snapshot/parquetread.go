package snapshot

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// ErrNotParquet marks a snapshot file that is not a readable Parquet file
// of the expected schema.
var ErrNotParquet = errors.New("not a valid Parquet file")

// readParquet streams the rows of f (name says which file, in errors) to
// fn in batches (the slice is reused between calls). The file's columns
// are checked against T's first. parquet-go panics on some corrupt inputs
// and on schemas it cannot convert; both become errors here so that a
// damaged file never takes a command down.
func readParquet[T any](f File, name string, fn func([]T) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s: %w: %v", name, ErrNotParquet, r)
		}
	}()
	pf, err := parquet.OpenFile(f, f.Size())
	if err != nil {
		return fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
	}
	want := parquet.SchemaOf(new(T))
	if err := checkColumns(want, pf.Schema()); err != nil {
		return fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
	}
	if _, err := parquet.Convert(want, pf.Schema()); err != nil {
		return fmt.Errorf("%s: %w: unexpected schema: %v", name, ErrNotParquet, err)
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
			return fmt.Errorf("%s: %w: %v", name, ErrNotParquet, rerr)
		}
	}
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

// openColumns opens f for reading whole columns, without the page index
// and bloom filters, which a full scan does not use. Reading a few columns
// page by page costs far less than building every row (domains.parquet
// has two dozen columns).
func openColumns(f File, name string) (*parquet.File, error) {
	pf, err := parquet.OpenFile(f, f.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
	}
	return pf, nil
}

// findColumns returns the indexes of the named top-level columns, each of
// the kind given.
func findColumns(pf *parquet.File, name string, cols []columnSpec) ([]int, error) {
	idx := make([]int, len(cols))
	for i, c := range cols {
		leaf, ok := pf.Schema().Lookup(c.name)
		if !ok || leaf.MaxRepetitionLevel != 0 || leaf.Node.Type().Kind() != c.kind {
			return nil, fmt.Errorf("%s: %w: no %s column of %v values", name, ErrNotParquet, c.name, c.kind)
		}
		idx[i] = leaf.ColumnIndex
	}
	return idx, nil
}

// columnSpec names a column and the kind of its values.
type columnSpec struct {
	name string
	kind parquet.Kind
}

// columnValues calls fn with every value of a column chunk, in order. A
// value's bytes are only valid during the call.
func columnValues(cc parquet.ColumnChunk, fn func(parquet.Value)) error {
	pages := cc.Pages()
	defer pages.Close()
	buf := make([]parquet.Value, 1024)
	for {
		page, err := pages.ReadPage()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		values := page.Values()
		for {
			n, err := values.ReadValues(buf)
			for _, v := range buf[:n] {
				fn(v)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				parquet.Release(page)
				return err
			}
		}
		parquet.Release(page)
	}
}
