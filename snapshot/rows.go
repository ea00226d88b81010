package snapshot

import (
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go"
)

// EachColumns streams one file of the snapshot to fn as rows of T, whose
// fields name a subset of the file's columns: a reader that needs four
// columns of ten million rows reads those four, not all of them. The
// columns T names are checked against the file's as EachDomain checks
// all of them.
func EachColumns[T any](f Files, file string, fn func([]T) error) error { return each(f, file, fn) }

// Rows is one file of a snapshot open for reading rows by number (a
// domain's page reads its own visits only). An open Rows keeps reading the
// file it opened after a rebuild prunes the snapshot or a removal
// rewrites the file: both replace the directory entry, not the open file.
type Rows[T any] struct {
	f    File
	pf   *parquet.File
	name string
}

// OpenRows opens file of the snapshot for reading rows of T by number.
func OpenRows[T any](f Files, file string) (_ *Rows[T], err error) {
	r, err := f.st.Open(f.ID, file)
	if err != nil {
		return nil, err
	}
	name := f.Location(file)
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %w: %v", name, ErrNotParquet, p)
		}
		if err != nil {
			r.Close()
		}
	}()
	pf, err := parquet.OpenFile(r, r.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
	}
	if err := checkColumns(parquet.SchemaOf(new(T)), pf.Schema()); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, ErrNotParquet, err)
	}
	return &Rows[T]{f: r, pf: pf, name: name}, nil
}

// Read returns rows [from, to) of the file (fewer at its end).
func (r *Rows[T]) Read(from, to int64) (out []T, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: %w: %v", r.name, ErrNotParquet, p)
		}
	}()
	rd := parquet.NewGenericReader[T](r.pf, parquet.SchemaOf(new(T)))
	defer rd.Close()
	if err := rd.SeekToRow(from); err != nil {
		return nil, fmt.Errorf("%s: %w", r.name, err)
	}
	out = make([]T, max(to-from, 0))
	n, err := rd.Read(out)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: %w: %v", r.name, ErrNotParquet, err)
	}
	return out[:n], nil
}

// Close closes the file.
func (r *Rows[T]) Close() error { return r.f.Close() }
