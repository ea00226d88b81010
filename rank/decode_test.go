package rank

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	aparquet "github.com/apache/arrow/go/v17/parquet"
	"github.com/apache/arrow/go/v17/parquet/compress"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/graphgen"
)

// writeArrowParquet writes rows as Arrow's (and so pyarrow's) writer
// does with the given properties.
func writeArrowParquet(t testing.TB, path string, rows []edgeRow, props *aparquet.WriterProperties) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "src", Type: arrow.BinaryTypes.String},
		{Name: "dst", Type: arrow.BinaryTypes.String},
		{Name: "nofollow", Type: arrow.FixedWidthTypes.Boolean},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.Src)
		b.Field(1).(*array.StringBuilder).Append(r.Dst)
		b.Field(2).(*array.BooleanBuilder).Append(r.Nofollow)
	}
	rec := b.NewRecord()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(schema, f, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil { // closes f
		t.Fatal(err)
	}
}

// encodings lists the encodings of the dst column chunks of a file.
func encodings(t testing.TB, path string) []aparquet.Encoding {
	t.Helper()
	pf, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	var encs []aparquet.Encoding
	for rg := range pf.NumRowGroups() {
		c, err := pf.MetaData().RowGroup(rg).ColumnChunk(1)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range c.Encodings() {
			if !slices.Contains(encs, e) {
				encs = append(encs, e)
			}
		}
	}
	return encs
}

// TestRankEdgeFileEncodings: the same ranks whatever the writer, the page
// layout and the names' encoding: plain, DELTA_LENGTH_BYTE_ARRAY,
// dictionary, and dictionary falling back to plain within a column chunk
// when the dictionary outgrows its page (as pyarrow and DuckDB do), in
// data pages of version 1 and 2, with pages that end at other rows in
// each column.
func TestRankEdgeFileEncodings(t *testing.T) {
	rows := generatedRows(t, graphgen.Config{Domains: 3000, Edges: 20_000, Seed: 3})
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name+".parquet") }
	writeParquet(t, path("reference"), rows, 0)

	type dictRow struct {
		Src      string `parquet:"src,dict"`
		Dst      string `parquet:"dst,dict"`
		Nofollow bool   `parquet:"nofollow"`
	}
	dictRows := make([]dictRow, len(rows))
	for i, r := range rows {
		dictRows[i] = dictRow(r)
	}
	func() {
		f, err := os.Create(path("parquet-go-dict-small-pages"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w := parquet.NewGenericWriter[dictRow](f, parquet.PageBufferSize(700), parquet.MaxRowsPerRowGroup(6000))
		if _, err := w.Write(dictRows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	arrowProps := func(dict bool, v aparquet.DataPageVersion) *aparquet.WriterProperties {
		return aparquet.NewWriterProperties(
			aparquet.WithDictionaryDefault(dict),
			aparquet.WithDictionaryPageSizeLimit(4<<10), // falls back to plain a few pages in
			aparquet.WithDataPageSize(1<<10),
			aparquet.WithDataPageVersion(v),
			aparquet.WithMaxRowGroupLength(7000),
			aparquet.WithCompression(compress.Codecs.Zstd),
		)
	}
	writeArrowParquet(t, path("arrow-dict-v1"), rows, arrowProps(true, aparquet.DataPageV1))
	writeArrowParquet(t, path("arrow-dict-v2"), rows, arrowProps(true, aparquet.DataPageV2))
	writeArrowParquet(t, path("arrow-plain"), rows, arrowProps(false, aparquet.DataPageV1))
	for _, name := range []string{"arrow-dict-v1", "arrow-dict-v2"} {
		encs := encodings(t, path(name))
		if !slices.Contains(encs, aparquet.Encodings.RLEDict) || !slices.Contains(encs, aparquet.Encodings.Plain) {
			t.Fatalf("%s: dst encodings %v, want a dictionary falling back to plain", name, encs)
		}
	}

	defer func(v int) { parallelMinEdges = v }(parallelMinEdges)
	parallelMinEdges = 1000 // exercise the parallel paths

	ranks := func(in string, workers int) []byte {
		out := filepath.Join(dir, "out.parquet")
		p := DefaultParams
		p.Workers = workers
		sum, err := RankEdgeFile(context.Background(), in, out, p, nil)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(in), err)
		}
		if sum.Rows != int64(len(rows)) {
			t.Errorf("%s: %d rows, want %d", filepath.Base(in), sum.Rows, len(rows))
		}
		var b bytes.Buffer
		for _, r := range readRanks(t, out) {
			rank := int64(0)
			if r.Rank != 0 {
				rank = r.Rank
			}
			fmt.Fprintf(&b, "%s %d %x %d %d\n", r.Domain, rank, r.Score, r.InDomains, r.OutDomains)
		}
		return b.Bytes()
	}
	want := ranks(path("reference"), 1)
	for _, name := range []string{"parquet-go-dict-small-pages", "arrow-dict-v1", "arrow-dict-v2", "arrow-plain"} {
		for _, workers := range []int{1, 2, 5} {
			if got := ranks(path(name), workers); !bytes.Equal(got, want) {
				t.Errorf("%s with %d workers: ranks differ from the reference's", name, workers)
			}
		}
	}
}

// TestRankEdgeFileDictionaryErrors: an empty or null name is an error in
// a dictionary-encoded column too, at its row.
func TestRankEdgeFileDictionaryErrors(t *testing.T) {
	dir := t.TempDir()
	type dictRow struct {
		Src string  `parquet:"src,dict"`
		Dst *string `parquet:"dst,dict,optional"`
	}
	s := func(v string) *string { return &v }
	cases := map[string]struct {
		rows []dictRow
		want string
	}{
		"empty": {[]dictRow{{"a.com", s("b.com")}, {"b.com", s("a.com")}, {"b.com", s("")}}, "row 2: empty domain name"},
		"null":  {[]dictRow{{"a.com", s("b.com")}, {"b.com", nil}}, "row 1: dst is null"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(dir, name+".parquet")
			writeParquet(t, in, c.rows, 0)
			_, err := RankEdgeFile(context.Background(), in, in+".out", Params{Workers: 2}, nil)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
				t.Errorf("error %v, want %q", err, c.want)
			}
		})
	}
}
