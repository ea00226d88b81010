package rank

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// TestNamesTooBig: an edge file of names whose rows, or rows and names,
// need more than the memory limit is refused with ErrNamesTooBig, which
// says what it would take and what to do, before memory runs out.
func TestNamesTooBig(t *testing.T) {
	cfg := graphgen.Config{Domains: 20_000, Edges: 100_000, Seed: 2}
	path := filepath.Join(t.TempDir(), "edges.parquet")
	writeParquet(t, path, generatedRows(t, cfg), 10_000)
	rows := cfg.Edges
	for _, c := range []struct {
		name  string
		limit int64
		want  string
	}{
		{"rows alone", edgefile.RowBytes*rows - 1, "its 100000 rows need 2 MiB (24 bytes a row), over the limit of 2 MiB"},
		{"with the names", edgefile.RowBytes*rows + edgefile.NameBytes*1000, "distinct names in its first"},
	} {
		_, err := edgefile.Read(context.Background(), path, edgefile.ReadOptions{Workers: 2, MemoryLimit: c.limit})
		if !errors.Is(err, edgefile.ErrNamesTooBig) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--ids") {
			t.Errorf("%s: %v, want ErrNamesTooBig with %q", c.name, err, c.want)
		}
	}
	el, err := edgefile.Read(context.Background(), path, edgefile.ReadOptions{Workers: 2, MemoryLimit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if n := el.Names.Len(); el.NameBytes < 32*int64(n) || el.NameBytes > 140*int64(n) {
		t.Errorf("name table of %d names: %d bytes", n, el.NameBytes)
	}
}

// TestRankFileIDs: RankFile ranks an edge file of ids by id (the rank
// file of RankIDRow), with the scores of the same graph given by names,
// and --ids (byID) reads the ids of a file that has names too.
func TestRankFileIDs(t *testing.T) {
	cfg := graphgen.Config{Domains: 5_000, Edges: 40_000, Seed: 3}
	g, err := graphgen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ids := filepath.Join(dir, "ids.parquet")
	if err := g.WriteIDEdgesParquet(ids, graphgen.IDFileOptions{RowGroupRows: 7_000}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ranks.parquet")
	sum, err := RankFile(context.Background(), ids, out, false, Params{Workers: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	byID, err := parquet.ReadFile[data.RankIDRow](out)
	if err != nil {
		t.Fatal(err)
	}
	if len(byID) != cfg.Domains || sum.Domains != cfg.Domains || sum.Rows != cfg.Edges {
		t.Fatalf("%d rows, summary %+v", len(byID), sum)
	}
	// Ranked by rank, then the unranked by id.
	for i, r := range byID {
		if i < sum.Ranked && r.Rank != int64(i+1) || i >= sum.Ranked && (r.Rank != 0 || i > sum.Ranked && r.ID < byID[i-1].ID) {
			t.Fatalf("row %d: %+v", i, r)
		}
	}

	// The same graph by names ranks the same domains first (its domains
	// are those in some edge, so 1/N and the scores differ a little).
	names := filepath.Join(dir, "names.parquet")
	writeParquet(t, names, generatedRows(t, cfg), 0)
	if _, err := RankFile(context.Background(), names, out, false, Params{Workers: 2}, nil); err != nil {
		t.Fatal(err)
	}
	byName, err := parquet.ReadFile[data.RankRow](out)
	if err != nil {
		t.Fatal(err)
	}
	var a, b []string
	for _, r := range byID[:20] {
		a = append(a, g.Name(uint32(r.ID)))
	}
	for _, r := range byName[:20] {
		b = append(b, r.Domain)
	}
	if !slices.Equal(a, b) {
		t.Errorf("top 20 by id %v, by name %v", a, b)
	}

	// A file with both: names by default, ids with byID.
	both := filepath.Join(dir, "both.parquet")
	type row struct {
		Src      string `parquet:"src"`
		Dst      string `parquet:"dst"`
		SrcID    int32  `parquet:"src_id"`
		DstID    int32  `parquet:"dst_id"`
		Nofollow bool   `parquet:"nofollow"`
	}
	writeParquet(t, both, []row{{"a.com", "b.com", 0, 1, false}, {"b.com", "c.com", 1, 2, false}}, 0)
	if _, err := RankFile(context.Background(), both, out, true, Params{}, nil); err != nil {
		t.Fatal(err)
	}
	if r, err := parquet.ReadFile[data.RankIDRow](out); err != nil || len(r) != 3 || r[0].ID != 2 {
		t.Errorf("--ids: %+v, %v", r, err)
	}
}
