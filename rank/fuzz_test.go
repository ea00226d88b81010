package rank

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// FuzzRankEdgeFile feeds arbitrary bytes as an edge file: RankEdgeFile
// must answer with a result or an error, never panic or hang.
func FuzzRankEdgeFile(f *testing.F) {
	var good bytes.Buffer
	if err := parquet.Write(&good, smallEdges); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())
	f.Add(good.Bytes()[:good.Len()/2])
	f.Add(good.Bytes()[good.Len()/2:])
	f.Add([]byte("PAR1PAR1"))
	f.Add([]byte("src,dst\na.com,b.com\n"))
	f.Add([]byte{})
	// Damaged files, so that the fuzzer starts from the reader's error
	// paths rather than having to find a valid footer first.
	for _, d := range damagedEdgeFiles(f) {
		f.Add(d.data)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		in, out := filepath.Join(dir, "in.parquet"), filepath.Join(dir, "out.parquet")
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		sum, err := RankEdgeFile(context.Background(), in, out, Params{Workers: 1}, nil)
		if err == nil && sum.Ranked > sum.Domains {
			t.Fatalf("%d ranked of %d domains", sum.Ranked, sum.Domains)
		}
	})
}

// FuzzRankIDFile feeds arbitrary bytes as an edge file of ids:
// RankIDFile (the streamed build) must answer with a result or an error,
// never panic or hang. A huge id in a footer's statistics is refused
// (ids above what memory allows are the operator's to mind).
func FuzzRankIDFile(f *testing.F) {
	type row struct {
		Src      int32 `parquet:"src_id,delta"`
		Dst      int32 `parquet:"dst_id"`
		Nofollow bool  `parquet:"nofollow"`
	}
	var good bytes.Buffer
	if err := parquet.Write(&good, []row{{0, 1, false}, {0, 2, true}, {1, 2, false}, {2, 0, false}, {3, 1, false}}, parquet.MaxRowsPerRowGroup(2)); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes())
	f.Add(good.Bytes()[:good.Len()/2])
	f.Add([]byte("PAR1PAR1"))
	f.Add([]byte{})
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		in, out := filepath.Join(dir, "in.parquet"), filepath.Join(dir, "out.parquet")
		if err := os.WriteFile(in, b, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := edgefile.OpenIDs(in)
		if err != nil || f.MaxID() > 1<<20 {
			return // not an edge file of ids, or one too big to rank here
		}
		sum, err := RankIDFile(context.Background(), in, out, Params{Workers: 2}, nil)
		if err == nil && sum.Ranked > sum.Domains {
			t.Fatalf("%d ranked of %d domains", sum.Ranked, sum.Domains)
		}
	})
}
