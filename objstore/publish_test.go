package objstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/minio/minio-go/v7"

	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/objstore/objstoretest"
)

const (
	idA = "2026-12-01T031500Z"
	idB = "2026-12-02T031500Z"
	idC = "2026-12-03T031500Z"
)

// snapshotDir writes a finished snapshot for id into a new directory:
// its files (each holding its name and the id, so a reader can tell
// snapshots apart), extra files, and manifest.json.
func snapshotDir(t *testing.T, id string, extra map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string][]byte{
		"domains.parquet":             []byte("domains of " + id),
		"edges.parquet":               []byte("edges of " + id),
		"schedule/shard=00.parquet":   []byte("schedule 0 of " + id),
		"schedule/shard=01.parquet":   []byte("schedule 1 of " + id),
		"manifest.json":               mustJSON(t, map[string]any{"id": id, "schema_version": 1}),
		"visits.parquet":              []byte("visits of " + id),
		"link_words.parquet":          []byte("link words of " + id),
		"schedule.parquet":            []byte("schedule of " + id),
		"edges_by_dst_unused.parquet": []byte("x"),
	}
	for k, v := range extra {
		files[k] = v
	}
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readCurrent reads domains.parquet of the snapshot a reader resolves.
func readCurrent(t *testing.T, st objstore.Store) (id, domains string) {
	t.Helper()
	id, err := objstore.Resolve(context.Background(), st, "")
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return id, get(t, st, objstore.SnapshotKey(id, "domains.parquet"))
}

func wantCurrent(t *testing.T, st objstore.Store, want string) {
	t.Helper()
	id, domains := readCurrent(t, st)
	if id != want || domains != "domains of "+want {
		t.Fatalf("current snapshot is %s (domains %q); want %s", id, domains, want)
	}
}

// TestPublish: the protocol on both stores: current moves only to a
// complete snapshot, ids are not published twice, Prune keeps the newest
// and the current one.
func TestPublish(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		ctx := context.Background()
		if _, err := objstore.Current(ctx, st); !errors.Is(err, objstore.ErrNoSnapshot) {
			t.Fatalf("Current of an empty store: %v", err)
		}
		if _, err := objstore.Resolve(ctx, st, ""); !errors.Is(err, objstore.ErrNoSnapshot) {
			t.Fatalf("Resolve of an empty store: %v", err)
		}
		if err := objstore.Publish(ctx, st, idA, snapshotDir(t, idA, nil), nil); err != nil {
			t.Fatal(err)
		}
		wantCurrent(t, st, idA)
		if got := get(t, st, objstore.SnapshotKey(idA, "schedule/shard=01.parquet")); got != "schedule 1 of "+idA {
			t.Errorf("schedule/shard=01.parquet = %q", got)
		}
		if d, ok := st.(*objstore.Dir); ok {
			// As in a data directory: a link DuckDB can read through.
			b, err := os.ReadFile(filepath.Join(d.Root(), "rebuilds", "current", "domains.parquet"))
			if err != nil || string(b) != "domains of "+idA {
				t.Errorf("rebuilds/current/domains.parquet: %q, %v", b, err)
			}
		} else {
			if got := get(t, st, objstore.CurrentKey); got != idA {
				t.Errorf("rebuilds/current holds %q", got)
			}
		}

		if err := objstore.Publish(ctx, st, idA, snapshotDir(t, idA, nil), nil); !errors.Is(err, objstore.ErrExists) {
			t.Errorf("publishing %s again: %v; want ErrExists", idA, err)
		}
		if err := objstore.Publish(ctx, st, idB, snapshotDir(t, idB, nil), nil); err != nil {
			t.Fatal(err)
		}
		wantCurrent(t, st, idB)
		// An explicit id reads an older snapshot.
		if id, err := objstore.Resolve(ctx, st, idA); err != nil || id != idA {
			t.Errorf("Resolve(%s) = %s, %v", idA, id, err)
		}
		// Current may go back to an older complete snapshot...
		if err := objstore.SetCurrent(ctx, st, idA); err != nil {
			t.Fatal(err)
		}
		wantCurrent(t, st, idA)
		// ...never to one that is not there.
		if err := objstore.SetCurrent(ctx, st, idC); !errors.Is(err, objstore.ErrIncomplete) {
			t.Errorf("SetCurrent(missing) = %v; want ErrIncomplete", err)
		}
		wantCurrent(t, st, idA)
		if err := objstore.Publish(ctx, st, idC, snapshotDir(t, idC, nil), nil); err != nil {
			t.Fatal(err)
		}
		if err := objstore.SetCurrent(ctx, st, idA); err != nil {
			t.Fatal(err)
		}
		// keep 1: C is the newest and A is current; B goes.
		removed, err := objstore.Prune(ctx, st, 1)
		if err != nil || !slices.Equal(removed, []string{idB}) {
			t.Fatalf("Prune(1) = %v, %v; want [%s]", removed, err, idB)
		}
		complete, incomplete, err := objstore.Snapshots(ctx, st)
		if err != nil || !slices.Equal(complete, []string{idA, idC}) || len(incomplete) != 0 {
			t.Fatalf("Snapshots = %v, %v, %v", complete, incomplete, err)
		}
		if list, _ := st.List(ctx, objstore.SnapshotPrefix(idB)); len(list) != 0 {
			t.Errorf("pruned %s left %v", idB, keys(list))
		}
		wantCurrent(t, st, idA)

		// What is not a finished snapshot is refused.
		if err := objstore.Publish(ctx, st, "yesterday", snapshotDir(t, idA, nil), nil); err == nil {
			t.Error("Publish with a bad id succeeded")
		}
		noManifest := snapshotDir(t, idB, nil)
		os.Remove(filepath.Join(noManifest, "manifest.json"))
		if err := objstore.Publish(ctx, st, idB, noManifest, nil); err == nil || !strings.Contains(err.Error(), "manifest.json") {
			t.Errorf("Publish without a manifest: %v", err)
		}
		if _, err := objstore.Prune(ctx, st, 0); err == nil {
			t.Error("Prune(0) succeeded")
		}
	})
}

// faultyStore fails Put for the keys fail says, after reading half of the
// body (an upload cut off), to test the protocol over any store.
type faultyStore struct {
	objstore.Store
	fail func(key string) bool
}

func (f faultyStore) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if f.fail(key) {
		io.CopyN(io.Discard, r, size/2)
		return fmt.Errorf("put %s: injected failure", key)
	}
	return f.Store.Put(ctx, key, r, size)
}

// TestFailedUploadKeepsCurrent (local directory): an upload that fails on
// any file, the manifest included, leaves current and the old snapshot as
// they were; RemoveIncomplete clears what it left, and the upload can be
// done again.
func TestFailedUploadKeepsCurrent(t *testing.T) {
	for _, failOn := range []string{"edges.parquet", "schedule/shard=01.parquet", "manifest.json"} {
		t.Run(failOn, func(t *testing.T) {
			ctx := context.Background()
			d, _ := objstore.NewDir(t.TempDir())
			if err := objstore.Publish(ctx, d, idA, snapshotDir(t, idA, nil), nil); err != nil {
				t.Fatal(err)
			}
			bad := faultyStore{d, func(key string) bool { return key == objstore.SnapshotKey(idB, failOn) }}
			dirB := snapshotDir(t, idB, nil)
			if err := objstore.Publish(ctx, bad, idB, dirB, nil); err == nil {
				t.Fatal("Publish succeeded")
			}
			checkFailedB(t, d)
			if err := objstore.Publish(ctx, d, idB, dirB, nil); err != nil {
				t.Fatal(err)
			}
			wantCurrent(t, d, idB)
		})
	}
}

// checkFailedB checks a store after a failed upload of idB over idA:
// current still reads A, B is incomplete or absent, RemoveIncomplete
// removes it.
func checkFailedB(t *testing.T, st objstore.Store) {
	t.Helper()
	ctx := context.Background()
	wantCurrent(t, st, idA)
	if _, err := objstore.Resolve(ctx, st, idB); !errors.Is(err, objstore.ErrIncomplete) {
		t.Errorf("Resolve(%s) after its failed upload: %v; want ErrIncomplete", idB, err)
	}
	if err := objstore.SetCurrent(ctx, st, idB); !errors.Is(err, objstore.ErrIncomplete) {
		t.Errorf("SetCurrent(%s) after its failed upload: %v; want ErrIncomplete", idB, err)
	}
	complete, _, err := objstore.Snapshots(ctx, st)
	if err != nil || !slices.Equal(complete, []string{idA}) {
		t.Errorf("complete snapshots %v, %v; want [%s]", complete, err, idA)
	}
	if _, err := objstore.RemoveIncomplete(ctx, st); err != nil {
		t.Fatal(err)
	}
	if list, _ := st.List(ctx, objstore.SnapshotPrefix(idB)); len(list) != 0 {
		t.Errorf("RemoveIncomplete left %v", keys(list))
	}
	wantCurrent(t, st, idA)
}

// faultTransport passes requests to a real transport, except that hook
// may fail one, or wrap its body.
type faultTransport struct {
	base http.RoundTripper
	hook func(req *http.Request) error
}

func (f *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := f.hook(req); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return f.base.RoundTrip(req)
}

// cutBody is a request body that fails after n bytes, as a connection
// that breaks mid-upload; or, with onCut, calls onCut there and goes on.
type cutBody struct {
	io.ReadCloser
	n     int64
	onCut func()
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.n <= 0 {
		if c.onCut == nil {
			return 0, errors.New("injected: connection cut mid-body")
		}
		c.onCut()
		c.onCut = nil
		c.n = 1 << 62
	}
	if int64(len(p)) > c.n {
		p = p[:c.n]
	}
	n, err := c.ReadCloser.Read(p)
	c.n -= int64(n)
	return n, err
}

func isPutOf(req *http.Request, key string) bool {
	return req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/"+key)
}

// TestS3FailedUploadKeepsCurrent: against a real S3 server (versitygw),
// an upload of B over A cut off mid-body, refused on its manifest, refused
// on current, or cancelled, leaves current naming A and A readable, with
// every error naming the bucket and key.
func TestS3FailedUploadKeepsCurrent(t *testing.T) {
	srv := objstoretest.Start(t)
	base, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		hook     func(req *http.Request, cancel func()) error
		complete bool // B is complete but not current after the failure
	}{
		{name: "connection cut mid-file", hook: func(req *http.Request, _ func()) error {
			// visits.parquet goes up after manifest.json's place in
			// path order: it must still go before the manifest.
			if isPutOf(req, "rebuilds/"+idB+"/visits.parquet") {
				req.Body = &cutBody{ReadCloser: req.Body, n: 4}
			}
			return nil
		}},
		{name: "manifest refused", hook: func(req *http.Request, _ func()) error {
			if isPutOf(req, "rebuilds/"+idB+"/manifest.json") {
				return errors.New("injected: network down")
			}
			return nil
		}},
		{name: "current refused", complete: true, hook: func(req *http.Request, _ func()) error {
			if isPutOf(req, "rebuilds/current") {
				return errors.New("injected: network down")
			}
			return nil
		}},
		{name: "cancelled", hook: func(req *http.Request, cancel func()) error {
			if isPutOf(req, "rebuilds/"+idB+"/link_words.parquet") {
				cancel()
			}
			return nil
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := "fail/" + strings.ReplaceAll(tc.name, " ", "-")
			good := srv.Store(prefix, nil)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			bad := srv.Store(prefix, func(c *objstore.S3Config) {
				c.Transport = &faultTransport{base: base, hook: func(req *http.Request) error { return tc.hook(req, cancel) }}
			})
			if err := objstore.Publish(ctx, good, idA, snapshotDir(t, idA, nil), nil); err != nil {
				t.Fatal(err)
			}
			dirB := snapshotDir(t, idB, nil)
			err := objstore.Publish(ctx, bad, idB, dirB, nil)
			if err == nil {
				t.Fatal("Publish succeeded")
			}
			if !strings.Contains(err.Error(), "s3://"+objstoretest.Bucket+"/"+prefix+"/rebuilds/") {
				t.Errorf("error does not name the object: %v", err)
			}
			t.Logf("Publish: %v", err)
			if tc.complete {
				wantCurrent(t, good, idA)
				if _, err := objstore.Resolve(context.Background(), good, idB); err != nil {
					t.Errorf("B is complete: %v", err)
				}
				return
			}
			checkFailedB(t, good)
			if err := objstore.Publish(context.Background(), good, idB, dirB, nil); err != nil {
				t.Fatal(err)
			}
			wantCurrent(t, good, idB)
		})
	}
}

// TestS3ServerKilledMidUpload: the server is killed (SIGKILL) while a part
// of a multipart upload is on the wire. Publish fails naming the object;
// after a restart current still names A and A reads whole, and
// RemoveIncomplete aborts the multipart upload and removes B's objects.
func TestS3ServerKilledMidUpload(t *testing.T) {
	srv := objstoretest.Start(t)
	base, err := minio.DefaultTransport(false)
	if err != nil {
		t.Fatal(err)
	}
	const partSize = 5 << 20
	var killed atomic.Bool
	var once sync.Once
	st := srv.Store("killed", func(c *objstore.S3Config) {
		c.PartSize = partSize
		c.Transport = &faultTransport{base: base, hook: func(req *http.Request) error {
			// The second part of edges.parquet: kill the server 1 MiB into it.
			if isPutOf(req, "rebuilds/"+idB+"/edges.parquet") && req.URL.Query().Get("partNumber") == "2" {
				once.Do(func() {
					req.Body = &cutBody{ReadCloser: req.Body, n: 1 << 20, onCut: func() { srv.Stop(); killed.Store(true) }}
				})
			}
			return nil
		}}
	})
	ctx := context.Background()
	if err := objstore.Publish(ctx, st, idA, snapshotDir(t, idA, nil), nil); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 3*partSize-1234) // three parts
	for i := range big {
		big[i] = byte(i * 7)
	}
	err = objstore.Publish(ctx, st, idB, snapshotDir(t, idB, map[string][]byte{"edges.parquet": big}), nil)
	if err == nil || !killed.Load() {
		t.Fatalf("Publish = %v (server killed: %v); want a failure", err, killed.Load())
	}
	if !strings.Contains(err.Error(), "s3://"+objstoretest.Bucket+"/killed/rebuilds/"+idB+"/edges.parquet") {
		t.Errorf("error does not name the object: %v", err)
	}
	t.Logf("Publish: %v", err)
	srv.Restart()
	removed, err := objstore.RemoveIncomplete(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("RemoveIncomplete: %v", removed)
	if !slices.ContainsFunc(removed, func(s string) bool { return strings.HasSuffix(s, "rebuilds/"+idB+"/edges.parquet") }) {
		t.Errorf("RemoveIncomplete did not abort the multipart upload of edges.parquet: %v", removed)
	}
	checkFailedB(t, st)
}

// TestDownload: a whole object to a local file, replaced atomically; a
// missing object leaves the file as it was.
func TestDownload(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		ctx := context.Background()
		body := strings.Repeat("edges ", 100000)
		put(t, st, "rebuilds/x/edges.parquet", body)
		dir := t.TempDir()
		path := filepath.Join(dir, "edges.parquet")
		if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := objstore.Download(ctx, st, "rebuilds/x/edges.parquet", path); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != body {
			t.Fatalf("downloaded %d bytes, %v", len(b), err)
		}
		if err := objstore.Download(ctx, st, "rebuilds/x/missing", path); !errors.Is(err, objstore.ErrNotExist) {
			t.Errorf("Download(missing) = %v", err)
		}
		if b, _ := os.ReadFile(path); string(b) != body {
			t.Error("a failed Download changed the file")
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("Download left %d entries", len(entries))
		}
	})
}

// TestUploadDirReplaces: a shard part uploaded again replaces the earlier
// attempt whole, its marker last; a prefix that is not a directory is
// refused.
func TestUploadDirReplaces(t *testing.T) {
	eachStore(t, func(t *testing.T, st objstore.Store) {
		ctx := context.Background()
		prefix := objstore.PartsPrefix + idA + "/shard=03/"
		put(t, st, prefix+"stale.parquet", "from a killed export")
		dir := t.TempDir()
		for name, body := range map[string]string{"names.parquet": "n", "edges.parquet": "e", "done": "ok"} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := objstore.UploadDir(ctx, st, prefix, dir, "done", nil); err != nil {
			t.Fatal(err)
		}
		list, err := st.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(keys(list), " "); got != prefix+"done "+prefix+"edges.parquet "+prefix+"names.parquet" {
			t.Errorf("after UploadDir: %s", got)
		}
		for _, bad := range []string{"", "parts", "/parts/", "parts//x/"} {
			if err := objstore.UploadDir(ctx, st, bad, dir, "", nil); err == nil {
				t.Errorf("UploadDir(prefix %q) succeeded", bad)
			}
		}
		if err := objstore.UploadDir(ctx, st, prefix, dir, "missing", nil); err == nil {
			t.Error("UploadDir with a missing last file succeeded")
		}
		if list, _ := st.List(ctx, prefix); len(list) != 3 {
			t.Errorf("a refused UploadDir changed the part: %v", keys(list))
		}
	})
}
