// Package runfile writes and reads the run files of the external sorts
// (graph's name order of a view, rebuild's link-word tallies): scratch
// files read back by this process only, so not synced (a crash loses the
// work, which is started again), and compressed with S2 (fast; a third to
// a half of the bytes to write and read back).
package runfile

import (
	"os"

	"github.com/klauspost/compress/s2"
)

// block is a run's S2 block: its reader holds about two (S2's default,
// 1 MiB, would cost a few MiB per run merged).
const block = 128 << 10

// Writer writes one run.
type Writer struct {
	f *os.File
	w *s2.Writer
}

// Create makes a new run file in dir, named as os.CreateTemp names from
// pattern.
func Create(dir, pattern string) (*Writer, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f, w: s2.NewWriter(f, s2.WriterConcurrency(1), s2.WriterBlockSize(block))}, nil
}

// Name is the run file's path.
func (w *Writer) Name() string { return w.f.Name() }

func (w *Writer) Write(p []byte) (int, error) { return w.w.Write(p) }

// Close ends the run and closes its file, returning the first error; a
// run whose Close failed is incomplete.
func (w *Writer) Close() error {
	err := w.w.Close()
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Reader reads one run: an io.Reader and io.ByteReader of its bytes.
type Reader struct {
	*s2.Reader
	f *os.File
}

// Open opens the run file at path.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	return &Reader{Reader: s2.NewReader(f, s2.ReaderMaxBlockSize(block)), f: f}, nil
}

// Name is the run file's path.
func (r *Reader) Name() string { return r.f.Name() }

// Close closes the run file.
func (r *Reader) Close() error { return r.f.Close() }
