package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/objstore/objstoretest"
)

// flipBody flips one byte of a request body at offset at, as damage on
// the way would.
type flipBody struct {
	io.ReadCloser
	pos, at int64
}

func (f *flipBody) Read(p []byte) (int, error) {
	n, err := f.ReadCloser.Read(p)
	if f.at >= f.pos && f.at < f.pos+int64(n) {
		p[f.at-f.pos] ^= 0x01
	}
	f.pos += int64(n)
	return n, err
}

// TestS3Integrity: data damaged between client and server is refused by
// the server (the CRC32C checksum), for a single PUT and for a part of a
// multipart upload, and the old object stays.
func TestS3Integrity(t *testing.T) {
	srv := objstoretest.Start(t)
	base, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	var damaged atomic.Int64
	st := srv.Store("integrity", func(c *objstore.S3Config) {
		c.PartSize = 5 << 20
		c.Transport = &faultTransport{base: base, hook: func(req *http.Request) error {
			if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/damaged") && req.ContentLength > 100 {
				req.Body = &flipBody{ReadCloser: req.Body, at: 50}
				damaged.Add(1)
			}
			return nil
		}}
	})
	ctx := context.Background()
	for _, size := range []int{1000, 11 << 20} {
		put(t, st, "damaged", "old")
		body := bytes.Repeat([]byte("snapshot "), size/9)
		err := st.Put(ctx, "damaged", bytes.NewReader(body), int64(len(body)))
		if err == nil {
			t.Fatalf("%d bytes: a damaged upload was stored", len(body))
		}
		t.Logf("%d bytes: %v", len(body), err)
		if got := get(t, st, "damaged"); got != "old" {
			t.Errorf("%d bytes: after a refused upload the object holds %d bytes", len(body), len(got))
		}
	}
	if damaged.Load() == 0 {
		t.Fatal("no request was damaged: the test tests nothing")
	}
}

// TestS3Retries: a request that fails for a transient cause is tried
// again and succeeds: refused before it was sent, or cut off mid-body (a
// single PUT, and one part of a multipart upload), whose retry must carry
// checksums that still match.
func TestS3Retries(t *testing.T) {
	srv := objstoretest.Start(t)
	base, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		size int
		fail func(req *http.Request) error
	}{
		{name: "refused", size: 1000, fail: func(req *http.Request) error { return errors.New("injected: connection reset") }},
		{name: "cut mid-body", size: 100000, fail: func(req *http.Request) error {
			req.Body = &cutBody{ReadCloser: req.Body, n: 5000}
			return nil
		}},
		{name: "part cut mid-body", size: 12 << 20, fail: func(req *http.Request) error {
			if req.URL.Query().Get("partNumber") != "2" {
				return nil
			}
			req.Body = &cutBody{ReadCloser: req.Body, n: 1 << 20}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var failures atomic.Int64
			st := srv.Store("retries", func(c *objstore.S3Config) {
				c.PartSize = 5 << 20
				c.MaxAttempts = 3
				c.Transport = &faultTransport{base: base, hook: func(req *http.Request) error {
					if req.Method != http.MethodPut || failures.Load() >= 2 {
						return nil
					}
					before := req.Body
					err := tc.fail(req)
					if err != nil || req.Body != before {
						failures.Add(1)
					}
					return err
				}}
			})
			body := make([]byte, tc.size)
			for i := range body {
				body[i] = byte(i * 13)
			}
			if err := st.Put(context.Background(), "k", bytes.NewReader(body), int64(len(body))); err != nil {
				t.Fatalf("Put after %d failures: %v", failures.Load(), err)
			}
			if got := get(t, st, "k"); got != string(body) || failures.Load() != 2 {
				t.Fatalf("%d bytes back (want %d) after %d failures (want 2)", len(got), len(body), failures.Load())
			}
		})
	}
}

// TestS3Multipart: an object over the part size goes up in parts, each
// with its checksums, and reads back whole, also with reads that cross
// part boundaries.
func TestS3Multipart(t *testing.T) {
	srv := objstoretest.Start(t)
	var parts atomic.Int64
	base, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	st := srv.Store("multipart", func(c *objstore.S3Config) {
		c.PartSize = 5 << 20
		c.Transport = &faultTransport{base: base, hook: func(req *http.Request) error {
			if req.URL.Query().Get("partNumber") != "" {
				parts.Add(1)
				if req.Header.Get("Content-Md5") == "" {
					t.Errorf("part %s without Content-MD5: %v", req.URL.Query().Get("partNumber"), req.Header)
				}
			}
			return nil
		}}
	})
	body := make([]byte, 12<<20)
	for i := range body {
		body[i] = byte(i*31 + i>>11)
	}
	ctx := context.Background()
	if err := st.Put(ctx, "big", bytes.NewReader(body), int64(len(body))); err != nil {
		t.Fatal(err)
	}
	if parts.Load() != 3 {
		t.Errorf("%d parts uploaded; want 3", parts.Load())
	}
	obj, err := st.Open(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	if obj.Size() != int64(len(body)) {
		t.Fatalf("Size = %d", obj.Size())
	}
	for _, off := range []int64{0, 5<<20 - 10, 10<<20 - 1, int64(len(body)) - 100} {
		buf := make([]byte, 100)
		n, err := obj.ReadAt(buf, off)
		if n != 100 || err != nil && err != io.EOF || !bytes.Equal(buf, body[off:off+100]) {
			t.Errorf("ReadAt(%d) = %d, %v, data equal: %v", off, n, err, bytes.Equal(buf[:n], body[off:off+int64(n)]))
		}
	}
	all, err := io.ReadAll(obj)
	if err != nil || !bytes.Equal(all, body) {
		t.Errorf("ReadAll: %d bytes, %v", len(all), err)
	}
}

// TestS3ReplacedWhileOpen: a reader that opened an object fails, rather
// than mixing versions, when the object is replaced under it.
func TestS3ReplacedWhileOpen(t *testing.T) {
	st := objstoretest.Start(t).Store("replaced", nil)
	put(t, st, "k", "first version")
	obj, err := st.Open(context.Background(), "k")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	put(t, st, "k", "second version")
	buf := make([]byte, 5)
	if _, err := obj.ReadAt(buf, 0); err == nil || !strings.Contains(err.Error(), "s3://snapshots/replaced/k") {
		t.Errorf("ReadAt of a replaced object: %q, %v; want an error naming the object", buf, err)
	}
}

// TestS3Errors: a missing bucket, wrong credentials and an unreachable
// server each give an error that names the bucket (and key).
func TestS3Errors(t *testing.T) {
	srv := objstoretest.Start(t)
	ctx := context.Background()
	missing := srv.Store("", func(c *objstore.S3Config) { c.Bucket = "no-such-bucket" })
	if err := missing.Check(ctx); err == nil || !strings.Contains(err.Error(), "s3://no-such-bucket") {
		t.Errorf("Check(missing bucket) = %v", err)
	}
	if err := missing.Put(ctx, "k", strings.NewReader("x"), 1); err == nil || !strings.Contains(err.Error(), "s3://no-such-bucket/k") {
		t.Errorf("Put(missing bucket) = %v", err)
	}
	wrong := srv.Store("p", func(c *objstore.S3Config) { c.SecretAccessKey = "wrong" })
	if err := wrong.Check(ctx); err == nil || !strings.Contains(err.Error(), "s3://"+objstoretest.Bucket) {
		t.Errorf("Check(wrong secret) = %v", err)
	}
	if _, err := wrong.Stat(ctx, "k"); err == nil || errors.Is(err, objstore.ErrNotExist) || !strings.Contains(err.Error(), "s3://"+objstoretest.Bucket+"/p/k") {
		t.Errorf("Stat(wrong secret) = %v", err)
	}
	good := srv.Store("p", nil)
	if err := good.Check(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if err := good.Put(ctx, "k", strings.NewReader("x"), 1); err == nil || !strings.Contains(err.Error(), "s3://"+objstoretest.Bucket+"/p/k") {
		t.Errorf("Put(server down) = %v", err)
	} else {
		t.Log(err)
	}
}
