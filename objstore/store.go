package objstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"time"
)

// Store holds objects under '/'-separated keys, relative to the store's
// root (a directory, or a bucket and prefix). Every method is safe for
// concurrent use.
type Store interface {
	// Put stores size bytes read from r as the object key, atomically:
	// readers see the previous object (or none) until Put returns nil, and
	// the whole new one after. A Put that fails or is cancelled leaves the
	// previous object as it was. It reads the first size bytes of r and
	// fails if r ends sooner; a seekable r (a file) must hold exactly size
	// bytes from its offset.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Open opens the object key for reading. Its error wraps ErrNotExist
	// when there is no such object.
	Open(ctx context.Context, key string) (Object, error)
	// Stat describes the object key; the error wraps ErrNotExist when
	// there is none.
	Stat(ctx context.Context, key string) (Info, error)
	// List describes every object whose key starts with prefix, in key
	// order. A prefix that should name a "directory" ends in '/'.
	List(ctx context.Context, prefix string) ([]Info, error)
	// Delete removes the object key; removing an object that does not
	// exist is not an error.
	Delete(ctx context.Context, key string) error
	// Check reports whether the store can be reached and its directory or
	// bucket exists, so that a long job fails before its work, not after.
	Check(ctx context.Context) error
	// String is the store's location, for messages: a directory, or
	// s3://bucket/prefix.
	String() string
}

// Object is an object opened for reading. ReadAt and Size are what Parquet
// readers need (parquet.OpenFile(obj, obj.Size())); Read and Seek read it
// as a stream. On S3 every ReadAt, and every Read after a Seek, is a ranged
// GET request.
type Object interface {
	io.ReaderAt
	io.ReadSeeker
	io.Closer
	// Size is the object's length in bytes.
	Size() int64
}

// Info describes one object.
type Info struct {
	Key     string // relative to the store's root
	Size    int64
	ModTime time.Time
}

// ErrNotExist: there is no object under that key (errors.Is(err,
// fs.ErrNotExist) holds as well).
var ErrNotExist = fs.ErrNotExist

// ErrBadLocation marks a --snapshots value, or an environment variable it
// depends on, that cannot be used: the caller should treat it as a usage
// error (exit 2).
var ErrBadLocation = errors.New("bad snapshot location")

// tempPrefix starts the name of every temporary file a Dir writes; no key
// segment may start with it, so a listing never shows one.
const tempPrefix = ".tmp-"

// checkKey reports whether key is a valid object key: '/'-separated
// segments, none empty, "." or "..", none starting with ".tmp-", and no NUL
// or backslash (which a local directory could not hold faithfully).
func checkKey(key string) error {
	if key == "" {
		return errors.New("empty object key")
	}
	if len(key) > 1024 {
		return fmt.Errorf("object key %.40q...: longer than 1024 bytes", key)
	}
	if strings.ContainsAny(key, "\x00\\") {
		return fmt.Errorf("object key %q: holds a NUL or a backslash", key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("object key %q: empty path segment", key)
		case seg == "." || seg == "..":
			return fmt.Errorf("object key %q: %q segment", key, seg)
		case strings.HasPrefix(seg, tempPrefix):
			return fmt.Errorf("object key %q: a segment starts with %q, kept for temporary files", key, tempPrefix)
		}
	}
	return nil
}

// checkPrefix reports whether prefix can start keys: "" or a valid key,
// with or without a trailing '/'.
func checkPrefix(prefix string) error {
	p := strings.TrimSuffix(prefix, "/")
	if p == "" {
		if prefix != "" {
			return fmt.Errorf("list prefix %q: starts with '/'", prefix)
		}
		return nil
	}
	return checkKey(p)
}

// exactBody gives a Put a body of exactly size bytes: a section of a
// seekable source (a file; an S3 request can then be retried), after
// checking that size bytes are left from its offset, or a stream cut at
// size that fails if it ends sooner (what follows is not read).
func exactBody(r io.Reader, size int64, name string) (io.Reader, error) {
	if size < 0 {
		return nil, fmt.Errorf("%s: negative size %d", name, size)
	}
	ra, okAt := r.(io.ReaderAt)
	sk, okSeek := r.(io.Seeker)
	if !okAt || !okSeek {
		return &sizeReader{r: r, left: size, key: name}, nil
	}
	off, err := sk.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil, err
	}
	end, err := sk.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	if _, err := sk.Seek(off, io.SeekStart); err != nil {
		return nil, err
	}
	if end-off != size {
		return nil, fmt.Errorf("%s: the source holds %d bytes, not the size given, %d", name, end-off, size)
	}
	return io.NewSectionReader(ra, off, size), nil
}

// sizeReader reads the first size bytes of r; an r that ends sooner is
// an io.ErrUnexpectedEOF.
type sizeReader struct {
	r    io.Reader
	left int64
	key  string
}

func (s *sizeReader) Read(p []byte) (int, error) {
	if s.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > s.left {
		p = p[:s.left]
	}
	n, err := s.r.Read(p)
	s.left -= int64(n)
	if err == io.EOF && s.left > 0 {
		err = fmt.Errorf("%s: the source ended %d bytes short of the size given: %w", s.key, s.left, io.ErrUnexpectedEOF)
	}
	return n, err
}
