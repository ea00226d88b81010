package objstore_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/objstore/objstoretest"
)

// Example: publish a finished snapshot directory, then read it as a
// reader would: resolve current once, open a file of that id.
func Example() {
	ctx := context.Background()
	root, _ := os.MkdirTemp("", "snapshots")
	defer os.RemoveAll(root)
	loc, err := objstore.ParseLocation(root) // or s3://bucket/prefix, with AWS_* set
	if err != nil {
		fmt.Println(err) // a usage error (exit 2)
		return
	}
	st, err := loc.Open(nil)
	if err != nil {
		fmt.Println(err)
		return
	}

	// A finished snapshot, as a rebuild leaves it.
	dir, _ := os.MkdirTemp("", "snapshot")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "domains.parquet"), []byte("..."), 0o644)
	os.WriteFile(filepath.Join(dir, data.ManifestFile), []byte(`{"id":"2026-12-03T031500Z"}`), 0o644)
	if err := objstore.Publish(ctx, st, "2026-12-03T031500Z", dir, nil); err != nil {
		fmt.Println(err)
		return
	}

	id, err := objstore.Resolve(ctx, st, "") // "": the current snapshot
	if err != nil {
		fmt.Println(err)
		return
	}
	obj, err := st.Open(ctx, objstore.SnapshotKey(id, "domains.parquet"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer obj.Close()
	fmt.Println(id, obj.Size())
	// Output: 2026-12-03T031500Z 3
}

// TestS3ParquetReader: parquet-go reads a file on S3 through Object's
// ranged reads (footer first, then column chunks), as the snapshot package
// will.
func TestS3ParquetReader(t *testing.T) {
	st := objstoretest.Start(t).Store("parquet", nil)
	path := filepath.Join(t.TempDir(), "edges.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[data.EdgeRow](f, parquet.MaxRowsPerRowGroup(1000))
	var rows []data.EdgeRow
	when := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5000 {
		rows = append(rows, data.EdgeRow{Src: fmt.Sprintf("s%05d.example", i/7), Dst: fmt.Sprintf("d%05d.example", i),
			SrcID: int32(i / 7), DstID: int32(i), FirstSeen: when, LastSeen: when, Nofollow: i%3 == 0})
	}
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	src := openFile(t, path)
	fi, _ := src.Stat()
	if err := st.Put(ctx, "edges.parquet", src, fi.Size()); err != nil {
		t.Fatal(err)
	}

	obj, err := st.Open(ctx, "edges.parquet")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	pf, err := parquet.OpenFile(obj, obj.Size())
	if err != nil {
		t.Fatal(err)
	}
	if pf.NumRows() != int64(len(rows)) || len(pf.RowGroups()) != 5 {
		t.Fatalf("%d rows in %d row groups", pf.NumRows(), len(pf.RowGroups()))
	}
	r := parquet.NewGenericReader[data.EdgeRow](pf)
	got := make([]data.EdgeRow, len(rows)+1)
	n, _ := r.Read(got)
	if n != len(rows) {
		t.Fatalf("read %d rows", n)
	}
	for i := range rows {
		if got[i] != rows[i] {
			t.Fatalf("row %d = %+v; want %+v", i, got[i], rows[i])
		}
	}
}
