package objstore_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/objstore/objstoretest"
)

// BenchmarkPut uploads a 64 MiB file (four 16 MiB parts on S3) and
// downloads it again, to a local directory and to versitygw on loopback.
//
//	go test -run '^$' -bench Put -benchtime 5x ./objstore
func BenchmarkPut(b *testing.B) {
	const size = 64 << 20
	path := filepath.Join(b.TempDir(), "edges.parquet")
	buf := make([]byte, size)
	for i := range buf {
		buf[i] = byte(i*2654435761>>13 ^ i)
	}
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		b.Fatal(err)
	}
	run := func(b *testing.B, st objstore.Store) {
		ctx := context.Background()
		b.SetBytes(size)
		for b.Loop() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			if err := st.Put(ctx, "rebuilds/x/edges.parquet", f, size); err != nil {
				b.Fatal(err)
			}
			f.Close()
			if err := objstore.Download(ctx, st, "rebuilds/x/edges.parquet", path+".back"); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("dir", func(b *testing.B) {
		d, _ := objstore.NewDir(b.TempDir())
		run(b, d)
	})
	b.Run("s3", func(b *testing.B) {
		run(b, objstoretest.Start(b).Store("bench", nil))
	})
}
