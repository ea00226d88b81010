package rank

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow/go/v17/arrow"
	"github.com/apache/arrow/go/v17/arrow/array"
	"github.com/apache/arrow/go/v17/arrow/memory"
	"github.com/apache/arrow/go/v17/parquet/file"
	"github.com/apache/arrow/go/v17/parquet/pqarrow"
	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graphgen"
)

var update = flag.Bool("update", false, "rewrite golden files")

type edgeRow struct {
	Src      string `parquet:"src"`
	Dst      string `parquet:"dst"`
	Nofollow bool   `parquet:"nofollow"`
}

// generatedRows is a generated graph's edges as edge-file rows.
func generatedRows(t testing.TB, cfg graphgen.Config) []edgeRow {
	t.Helper()
	g, err := graphgen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rows []edgeRow
	if err := g.Edges(func(s, d uint32, nf bool) error {
		rows = append(rows, edgeRow{g.Name(s), g.Name(d), nf})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

// writeParquet writes rows to a new file in dir, rowsPerGroup rows per
// row group (0: one group).
func writeParquet[T any](t testing.TB, path string, rows []T, rowsPerGroup int) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	var opts []parquet.WriterOption
	if rowsPerGroup > 0 {
		opts = append(opts, parquet.MaxRowsPerRowGroup(int64(rowsPerGroup)))
	}
	w := parquet.NewGenericWriter[T](f, opts...)
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func readRanks(t testing.TB, path string) []data.RankRow {
	t.Helper()
	rows, err := parquet.ReadFile[data.RankRow](path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// checkRanksWithArrow reads a rank file with Arrow, another reader than
// the one that wrote it, and checks it against rows: the same domains and
// scores, and rank null exactly where rows has 0 (unranked).
func checkRanksWithArrow(t *testing.T, path string, rows []data.RankRow) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	if tbl.NumRows() != int64(len(rows)) {
		t.Fatalf("Arrow reads %d rows, want %d", tbl.NumRows(), len(rows))
	}
	col := func(name string) arrow.Array {
		idx := tbl.Schema().FieldIndices(name)
		if len(idx) != 1 || tbl.Column(idx[0]).Data().Len() != len(rows) || len(tbl.Column(idx[0]).Data().Chunks()) != 1 {
			t.Fatalf("column %s: %v", name, idx)
		}
		return tbl.Column(idx[0]).Data().Chunk(0)
	}
	domains, ranks, scores := col("domain").(*array.String), col("rank").(*array.Int64), col("score").(*array.Float64)
	for i, r := range rows {
		if domains.Value(i) != r.Domain || scores.Value(i) != r.Score {
			t.Errorf("row %d: Arrow reads %s %v, want %s %v", i, domains.Value(i), scores.Value(i), r.Domain, r.Score)
		}
		if null := ranks.IsNull(i); null != (r.Rank == 0) || !null && ranks.Value(i) != r.Rank {
			t.Errorf("row %d (%s): Arrow reads rank %v (null %v), want %d", i, r.Domain, ranks.Value(i), null, r.Rank)
		}
	}
}

func formatRanks(rows []data.RankRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s %4s %-16s %3s %3s\n", "domain", "rank", "score", "in", "out")
	for _, r := range rows {
		rank := "-"
		if r.Rank != 0 {
			rank = fmt.Sprint(r.Rank)
		}
		fmt.Fprintf(&b, "%-12s %4s %.14f %3d %3d\n", r.Domain, rank, r.Score, r.InDomains, r.OutDomains)
	}
	return b.String()
}

// smallEdges is a graph with every case: a tie (b.org and c.net are each
// linked by a.com alone), duplicates, a self-loop, a nofollow-only target
// (n.io: listed, unranked), a domain linked followed and nofollow
// (c.net: followed wins), a dangling domain, one with no in-link, and a
// tie between ca.com and d.de, which appears first.
var smallEdges = []edgeRow{
	{"a.com", "b.org", false},
	{"a.com", "c.net", false},
	{"a.com", "c.net", true},
	{"a.com", "b.org", false},
	{"b.org", "hub.co.uk", false},
	{"c.net", "hub.co.uk", false},
	{"d.de", "hub.co.uk", false},
	{"d.de", "d.de", false},
	{"d.de", "n.io", true},
	{"hub.co.uk", "a.com", false},
	{"hub.co.uk", "b.org", false},
	{"e.fr", "d.de", false},
	{"e.fr", "ca.com", false}, // ties with d.de: the smaller name first
}

func TestRankEdgeFileGolden(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "edges.parquet"), filepath.Join(dir, "ranks.parquet")
	writeParquet(t, in, smallEdges, 0)
	sum, err := RankEdgeFile(context.Background(), in, out, DefaultParams, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Domains != 8 || sum.Rows != int64(len(smallEdges)) || sum.FollowedEdges != 9 || sum.Ranked != 6 || sum.Residual >= 1e-9 {
		t.Errorf("summary %+v", sum)
	}
	if len(sum.Stages) != 6 {
		t.Errorf("stages %+v", sum.Stages)
	}
	got := formatRanks(readRanks(t, out))
	golden := filepath.Join("testdata", "small.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	checkRanksWithArrow(t, out, readRanks(t, out))
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("output mode: %v, %v", fi, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("left files behind: %v", entries)
	}
}

// TestRankEdgeFileOrderAndWorkers: the same output, bit for bit, for a
// shuffled edge file cut into other row groups, and for any workers.
func TestRankEdgeFileOrderAndWorkers(t *testing.T) {
	rows := generatedRows(t, graphgen.Config{Domains: 20_000, Edges: 150_000, Seed: 9})
	dir := t.TempDir()
	sorted := filepath.Join(dir, "sorted.parquet")
	writeParquet(t, sorted, rows, 0)
	r := rand.New(rand.NewPCG(1, 2))
	r.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
	shuffled := filepath.Join(dir, "shuffled.parquet")
	writeParquet(t, shuffled, rows, 7777)

	defer func(v int) { parallelMinEdges = v }(parallelMinEdges)
	parallelMinEdges = 10_000 // exercise the parallel paths

	var want []byte
	for i, c := range []struct {
		in      string
		workers int
	}{{sorted, 1}, {shuffled, 1}, {sorted, 2}, {shuffled, 3}, {shuffled, 8}} {
		out := filepath.Join(dir, fmt.Sprintf("ranks%d.parquet", i))
		p := DefaultParams
		p.Workers = c.workers
		if _, err := RankEdgeFile(context.Background(), c.in, out, p, nil); err != nil {
			t.Fatal(err)
		}
		// Compare the rows, scores by their bits.
		var b bytes.Buffer
		for _, r := range readRanks(t, out) {
			rank := int64(0)
			if r.Rank != 0 {
				rank = r.Rank
			}
			fmt.Fprintf(&b, "%s %d %x %d %d\n", r.Domain, rank, r.Score, r.InDomains, r.OutDomains)
		}
		if i == 0 {
			want = b.Bytes()
			continue
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s with %d workers: ranks differ from the sorted file's with 1 worker", filepath.Base(c.in), c.workers)
		}
	}
}

// TestRankEdgeFileInputs: other layouts of a valid edge file.
func TestRankEdgeFileInputs(t *testing.T) {
	dir := t.TempDir()
	type dictRow struct {
		Src string `parquet:"src,dict"`
		Dst string `parquet:"dst,dict"`
	}
	type plainRow struct {
		Dst   string `parquet:"dst"`
		Extra int64  `parquet:"extra"`
		Src   []byte `parquet:"src"`
	}
	type snapshotRow = data.EdgeRow
	type optionalRow struct {
		Src      *string `parquet:"src,optional"`
		Dst      *string `parquet:"dst,optional"`
		Nofollow *bool   `parquet:"nofollow,optional"`
	}
	str := func(s string) *string { return &s }
	yes, no := true, false
	cases := map[string]func(path string){
		// Nullable columns without a null name; a null nofollow is false.
		"optional columns, null nofollow": func(p string) {
			writeParquet(t, p, []optionalRow{
				{str("a.com"), str("b.com"), nil}, {str("b.com"), str("a.com"), &no},
				{str("c.com"), str("a.com"), nil}, {str("a.com"), str("c.com"), &yes},
			}, 0)
		},
		"dictionary": func(p string) {
			writeParquet(t, p, []dictRow{{"a.com", "b.com"}, {"b.com", "a.com"}, {"c.com", "a.com"}}, 0)
		},
		"binary names, no nofollow, other columns": func(p string) {
			writeParquet(t, p, []plainRow{{"b.com", 1, []byte("a.com")}, {"a.com", 2, []byte("b.com")}, {"a.com", 3, []byte("c.com")}}, 0)
		},
		"the snapshot's edges.parquet": func(p string) {
			writeParquet(t, p, []snapshotRow{{Src: "a.com", Dst: "b.com"}, {Src: "b.com", Dst: "a.com"}, {Src: "c.com", Dst: "a.com"}}, 0)
		},
	}
	for name, write := range cases {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".parquet")
			write(in)
			sum, err := RankEdgeFile(context.Background(), in, in+".out", Params{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			rows := readRanks(t, in+".out")
			if sum.Domains != 3 || len(rows) != 3 || rows[0].Domain != "a.com" || rows[0].Rank != 1 || rows[2].Domain != "c.com" || rows[2].Rank != 0 {
				t.Errorf("summary %+v, rows\n%s", sum, formatRanks(rows))
			}
		})
	}
}

func TestRankEdgeFileEmpty(t *testing.T) {
	dir := t.TempDir()
	in, out := filepath.Join(dir, "e.parquet"), filepath.Join(dir, "r.parquet")
	writeParquet(t, in, []edgeRow{}, 0)
	sum, err := RankEdgeFile(context.Background(), in, out, Params{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Domains != 0 || sum.Rows != 0 || sum.Ranked != 0 {
		t.Errorf("summary %+v", sum)
	}
	if rows := readRanks(t, out); len(rows) != 0 {
		t.Errorf("rows %v", rows)
	}
}

func TestRankEdgeFileErrors(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	if err := os.WriteFile(path("text.parquet"), []byte("src,dst\na.com,b.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path("zero.parquet"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	writeParquet(t, path("nodst.parquet"), []struct {
		Src    string `parquet:"src"`
		Target string `parquet:"target"`
	}{{"a.com", "b.com"}}, 0)
	writeParquet(t, path("intsrc.parquet"), []struct {
		Src int64  `parquet:"src"`
		Dst string `parquet:"dst"`
	}{{1, "b.com"}}, 0)
	writeParquet(t, path("nulldst.parquet"), []struct {
		Src string  `parquet:"src"`
		Dst *string `parquet:"dst,optional"`
	}{{"a.com", ptr("b.com")}, {"b.com", nil}}, 0)
	writeParquet(t, path("emptyname.parquet"), []edgeRow{{"a.com", "", false}}, 0)
	writeParquet(t, path("longname.parquet"), []edgeRow{{"a.com", "b.com", false}, {"a.com", strings.Repeat("x", 70_000) + ".com", false}}, 0)
	writeParquet(t, path("intnofollow.parquet"), []struct {
		Src      string `parquet:"src"`
		Dst      string `parquet:"dst"`
		Nofollow int32  `parquet:"nofollow"`
	}{{"a.com", "b.com", 1}}, 0)
	writeParquet(t, path("good.parquet"), smallEdges, 0)

	tests := []struct {
		in, out string
		want    []string // substrings of the error
	}{
		{path("missing.parquet"), path("o"), []string{"missing.parquet", "no such file"}},
		{path("text.parquet"), path("o"), []string{"text.parquet", "not a readable Parquet file"}},
		{path("zero.parquet"), path("o"), []string{"zero.parquet", "not a readable Parquet file"}},
		{path("nodst.parquet"), path("o"), []string{"nodst.parquet", `no "dst" column`, "found: src, target"}},
		{path("intsrc.parquet"), path("o"), []string{"intsrc.parquet", "column src has type int64, want string"}},
		{path("nulldst.parquet"), path("o"), []string{"nulldst.parquet", "row 1: dst is null"}},
		{path("emptyname.parquet"), path("o"), []string{"emptyname.parquet", "row 0: empty domain name"}},
		{path("longname.parquet"), path("o"), []string{"longname.parquet", "a domain name of 70004 bytes: longer than 65535"}},
		{path("intnofollow.parquet"), path("o"), []string{"intnofollow.parquet", "nofollow has type int32, want bool"}},
		{path("good.parquet"), filepath.Join(dir, "no-such-dir", "o"), []string{"no-such-dir"}},
	}
	for _, tc := range tests {
		t.Run(filepath.Base(tc.in), func(t *testing.T) {
			_, err := RankEdgeFile(context.Background(), tc.in, tc.out, Params{}, nil)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if _, err := os.Stat(tc.out); err == nil {
				t.Error("wrote an output file")
			}
		})
	}
	if _, err := RankEdgeFile(context.Background(), path("good.parquet"), path("o"), Params{Damping: 2}, nil); err == nil {
		t.Error("bad params: no error")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := RankEdgeFile(ctx, path("good.parquet"), path("o"), Params{}, nil); err == nil {
		t.Error("cancelled: no error")
	}
}

func ptr[T any](v T) *T { return &v }

// TestRankEdgeFileProgress: reading reports rows read out of the file's
// rows, PageRank its iterations, and every stage is logged.
func TestRankEdgeFileProgress(t *testing.T) {
	defer func(d time.Duration) { progressEvery = d }(progressEvery)
	progressEvery = 0 // at every batch
	dir := t.TempDir()
	in, out := filepath.Join(dir, "edges.parquet"), filepath.Join(dir, "ranks.parquet")
	writeParquet(t, in, smallEdges, 0)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	sum, err := RankEdgeFile(context.Background(), in, out, DefaultParams, logger)
	if err != nil {
		t.Fatal(err)
	}
	// Every PageRank iteration too, at progressEvery 0.
	for i := 1; i <= sum.Iterations; i++ {
		if want := fmt.Sprintf(`msg="pagerank iteration" iteration=%d `, i); !strings.Contains(logs.String(), want) {
			t.Errorf("no line %q in\n%s", want, logs.String())
		}
	}
	want := fmt.Sprintf(`msg="reading edge file" file=%s rows=%d of=%d percent=100`, in, len(smallEdges), len(smallEdges))
	if !strings.Contains(logs.String(), want) {
		t.Errorf("no progress line %q in\n%s", want, logs.String())
	}
	for _, st := range []string{StageRead, StageRenumber, StageCSR, StagePageRank, StageRanks, StageWrite} {
		if !strings.Contains(logs.String(), `msg="rank stage done" stage=`+st+" ") {
			t.Errorf("stage %s not logged in\n%s", st, logs.String())
		}
	}

	// An edge file of ids logs PageRank's iterations too.
	logs.Reset()
	ids := writeIDRows(t, []idRow{{0, 1, false}, {0, 2, false}, {1, 2, false}, {2, 0, false}, {3, 2, false}})
	sum, err = RankIDFile(context.Background(), ids, out, DefaultParams, logger)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`msg="pagerank iteration" iteration=%d `, sum.Iterations); !strings.Contains(logs.String(), want) {
		t.Errorf("ids: no line %q in\n%s", want, logs.String())
	}
}
