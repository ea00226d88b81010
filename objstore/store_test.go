package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/objstore/objstoretest"
)

// eachStore runs test against each Store: a local directory, and a bucket
// prefix on a real S3 server (versitygw; that subtest skips when it is not
// installed).
func eachStore(t *testing.T, test func(t *testing.T, st objstore.Store)) {
	t.Run("dir", func(t *testing.T) {
		d, err := objstore.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		test(t, d)
	})
	t.Run("s3", func(t *testing.T) {
		test(t, objstoretest.Start(t).Store("some/prefix", nil))
	})
}

func put(t *testing.T, st objstore.Store, key, body string) {
	t.Helper()
	if err := st.Put(context.Background(), key, strings.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, st objstore.Store, key string) string {
	t.Helper()
	obj, err := st.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != obj.Size() {
		t.Fatalf("%s: read %d bytes, Size says %d", key, len(b), obj.Size())
	}
	return string(b)
}

func keys(infos []objstore.Info) []string {
	var ks []string
	for _, i := range infos {
		ks = append(ks, i.Key)
	}
	return ks
}

// TestStoreContract holds both stores to the Store interface's contract.
func TestStoreContract(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		{
			ctx := context.Background()
			if err := st.Check(ctx); err != nil {
				t.Fatal(err)
			}
			put(t, st, "a/b/one", "hello")
			put(t, st, "a/b/one", "hello, again") // replaces
			put(t, st, "a/b-c", "x")
			put(t, st, "a/empty", "")
			put(t, st, "z", "last")
			if got := get(t, st, "a/b/one"); got != "hello, again" {
				t.Errorf("a/b/one = %q", got)
			}
			if got := get(t, st, "a/empty"); got != "" {
				t.Errorf("a/empty = %q", got)
			}

			// Random access, as Parquet readers do it.
			obj, err := st.Open(ctx, "a/b/one")
			if err != nil {
				t.Fatal(err)
			}
			if err := iotest.TestReader(obj, []byte("hello, again")); err != nil {
				t.Error(err)
			}
			buf := make([]byte, 5)
			if n, err := obj.ReadAt(buf, 7); n != 5 || err != nil && err != io.EOF || string(buf) != "again" {
				t.Errorf("ReadAt(7) = %d %q %v", n, buf, err)
			}
			if n, err := obj.ReadAt(buf, 10); n != 2 || err != io.EOF {
				t.Errorf("ReadAt past the end = %d, %v; want 2, io.EOF", n, err)
			}
			obj.Close()

			info, err := st.Stat(ctx, "a/b/one")
			if err != nil || info.Size != 12 || info.Key != "a/b/one" || info.ModTime.IsZero() {
				t.Errorf("Stat = %+v, %v", info, err)
			}
			list, err := st.List(ctx, "a/")
			if err != nil {
				t.Fatal(err)
			}
			if got, want := strings.Join(keys(list), " "), "a/b-c a/b/one a/empty"; got != want {
				t.Errorf("List(a/) = %s; want %s", got, want)
			}
			list, _ = st.List(ctx, "a/b")
			if got, want := strings.Join(keys(list), " "), "a/b-c a/b/one"; got != want {
				t.Errorf("List(a/b) = %s; want %s", got, want)
			}
			list, _ = st.List(ctx, "")
			if len(list) != 4 {
				t.Errorf("List() = %v", keys(list))
			}
			if list, err := st.List(ctx, "nothing/"); err != nil || len(list) != 0 {
				t.Errorf("List(nothing/) = %v, %v", list, err)
			}

			// Missing objects.
			for _, op := range []func() error{
				func() error { _, err := st.Open(ctx, "a/missing"); return err },
				func() error { _, err := st.Stat(ctx, "a/missing"); return err },
			} {
				if err := op(); !errors.Is(err, objstore.ErrNotExist) || !strings.Contains(err.Error(), "a/missing") {
					t.Errorf("missing object: %v; want ErrNotExist naming the key", err)
				}
			}
			if err := st.Delete(ctx, "a/missing"); err != nil {
				t.Errorf("Delete(missing) = %v", err)
			}
			if err := st.Delete(ctx, "a/b/one"); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Stat(ctx, "a/b/one"); !errors.Is(err, objstore.ErrNotExist) {
				t.Errorf("after Delete: %v", err)
			}

			// A source shorter than its size stores nothing, be it
			// seekable (a file) or a stream; a seekable one longer too.
			for _, tc := range []struct {
				r    io.Reader
				size int64
			}{
				{strings.NewReader("short"), 9},
				{struct{ io.Reader }{strings.NewReader("short")}, 9},
				{strings.NewReader("too long"), 3},
			} {
				if err := st.Put(ctx, "a/bad", tc.r, tc.size); err == nil {
					t.Errorf("Put(%T, size %d) succeeded", tc.r, tc.size)
				}
				if _, err := st.Stat(ctx, "a/bad"); !errors.Is(err, objstore.ErrNotExist) {
					t.Errorf("after a failed Put(%T, size %d): %v", tc.r, tc.size, err)
				}
			}
			// A stream is read up to its size.
			put(t, st, "a/cut", "")
			if err := st.Put(ctx, "a/cut", struct{ io.Reader }{strings.NewReader("abcdef")}, 3); err != nil {
				t.Fatal(err)
			}
			if got := get(t, st, "a/cut"); got != "abc" {
				t.Errorf("a/cut = %q; want abc", got)
			}
			if err := st.Delete(ctx, "a/cut"); err != nil {
				t.Fatal(err)
			}
			// A failing source leaves the old object.
			failing := io.MultiReader(strings.NewReader("new"), iotest.ErrReader(errors.New("disk gone")))
			if err := st.Put(ctx, "z", failing, 10); err == nil {
				t.Error("Put from a failing reader succeeded")
			}
			if got := get(t, st, "z"); got != "last" {
				t.Errorf("z after a failed Put = %q", got)
			}
			// A cancelled context stores nothing.
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := st.Put(cctx, "a/cancelled", strings.NewReader("x"), 1); !errors.Is(err, context.Canceled) {
				t.Errorf("Put with a cancelled context: %v", err)
			}
			if _, err := st.Stat(ctx, "a/cancelled"); !errors.Is(err, objstore.ErrNotExist) {
				t.Errorf("after a cancelled Put: %v", err)
			}

			// Keys that no store accepts.
			for _, key := range []string{"", "/a", "a/", "a//b", "a/../b", "./a", "a/.tmp-x", "a\\b", "a\x00b"} {
				if err := st.Put(ctx, key, strings.NewReader("x"), 1); err == nil {
					t.Errorf("Put(%q) succeeded", key)
				}
				if _, err := st.Open(ctx, key); err == nil {
					t.Errorf("Open(%q) succeeded", key)
				}
			}
		}
	})
}

// TestPutFromFile: a file source (what Publish uploads) with the size of
// what is left of it from its offset, and a mismatch refused.
func TestPutFromFile(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		{
			ctx := context.Background()
			body := bytes.Repeat([]byte("0123456789"), 1000)
			path := t.TempDir() + "/f"
			if err := writeFile(path, body); err != nil {
				t.Fatal(err)
			}
			f := openFile(t, path)
			if err := st.Put(ctx, "f", f, int64(len(body))); err != nil {
				t.Fatal(err)
			}
			if got := get(t, st, "f"); got != string(body) {
				t.Errorf("f: %d bytes back, want %d", len(got), len(body))
			}
			f = openFile(t, path)
			if err := st.Put(ctx, "g", f, int64(len(body))-1); err == nil {
				t.Error("Put of a file with a size one short succeeded")
			}
			if _, err := st.Stat(ctx, "g"); !errors.Is(err, objstore.ErrNotExist) {
				t.Errorf("after a refused Put: %v", err)
			}
		}
	})
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o644) }

func openFile(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}
