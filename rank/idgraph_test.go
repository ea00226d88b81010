package rank

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/graphgen"
)

// idFile writes cfg's graph as an edge file of ids with row groups of
// groupRows rows and returns its path and the followed edges (as BuildCSR
// takes them).
func idFile(t testing.TB, cfg graphgen.Config, groupRows int) (path string, src, dst []uint32) {
	t.Helper()
	g, err := graphgen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(t.TempDir(), "edges.parquet")
	if err := g.WriteIDEdgesParquet(path, graphgen.IDFileOptions{RowGroupRows: groupRows, Workers: 2}); err != nil {
		t.Fatal(err)
	}
	err = g.Edges(func(s, d uint32, nofollow bool) error {
		if !nofollow {
			src, dst = append(src, s), append(dst, d)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return path, src, dst
}

// TestReadIDGraphSameAsBuildCSR: the streamed build from an edge file of
// ids gives BuildCSR's graph of the same followed edges and the same
// PageRank scores, bit for bit, for any workers (stretches of the file
// read at once) and on the path of graphs of more than 2³² edges
// (offsetBits lowered): on a graph of graphgen's S shape and on one of
// M's shape with planted communities, both small enough for -race.
func TestReadIDGraphSameAsBuildCSR(t *testing.T) {
	defer func(b uint8) { offsetBits = b }(offsetBits)
	type run struct {
		workers int
		bits    uint8
	}
	for _, c := range []struct {
		name string
		cfg  graphgen.Config
		runs []run
	}{
		{"S-like", graphgen.Config{Domains: 30_000, Edges: 300_000, Seed: 1}, []run{{3, 9}}},
		{"M-like", graphgen.Config{Domains: 20_000, Edges: 200_000, Seed: 7, Communities: 40}, []run{{1, 32}, {4, 32}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			offsetBits = 32
			path, src, dst := idFile(t, c.cfg, 100_000)
			want, err := BuildCSR(uint32(c.cfg.Domains), src, dst, 2)
			if err != nil {
				t.Fatal(err)
			}
			wantPR, err := PageRank(context.Background(), want, Params{Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range c.runs {
				offsetBits = tc.bits
				g, info, err := ReadIDGraph(context.Background(), path, IDGraphOptions{Workers: tc.workers})
				if err != nil {
					t.Fatal(err)
				}
				if info.Rows != int64(c.cfg.Edges) || info.Followed != int64(len(src)) {
					t.Errorf("workers %d: %+v, want %d rows, %d followed", tc.workers, info, c.cfg.Edges, len(src))
				}
				if tc.bits < 32 && len(g.offsets.steps) == 0 {
					t.Fatalf("offsetBits %d: no steps", tc.bits)
				}
				if !equalCSR(g, want) {
					t.Fatalf("workers %d, offsetBits %d: the streamed CSR differs from BuildCSR's", tc.workers, tc.bits)
				}
				res, err := PageRank(context.Background(), g, Params{Workers: tc.workers})
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(res.Scores, wantPR.Scores) || res.Iterations != wantPR.Iterations {
					t.Fatalf("workers %d: scores differ", tc.workers)
				}
			}
		})
	}
}

// TestReadIDGraphDense: with an id map (a store's ids with gaps), the
// graph is that of the mapped ids; the map must increase.
func TestReadIDGraphDense(t *testing.T) {
	path := writeIDRows(t, []idRow{{0, 3, false}, {0, 5, false}, {3, 5, true}, {5, 0, false}})
	dense := []int32{0, -1, -1, 1, -1, 2}
	g, info, err := ReadIDGraph(context.Background(), path, IDGraphOptions{Nodes: 3, Dense: dense})
	if err != nil {
		t.Fatal(err)
	}
	want := csrOf(3, []uint64{0, 1, 2, 3}, []uint32{2, 0, 0}, []uint32{2, 0, 1})
	if !equalCSR(g, want) || info.Rows != 4 || info.Followed != 3 {
		t.Errorf("got %+v %v, %+v", g, g.offsets, info)
	}
	// A map that does not increase: the same graph of the mapped ids.
	g, _, err = ReadIDGraph(context.Background(), path, IDGraphOptions{Nodes: 3, Dense: []int32{2, -1, -1, 0, -1, 1}})
	if err != nil {
		t.Fatal(err)
	}
	want = csrOf(3, []uint64{0, 1, 2, 3}, []uint32{2, 2, 1}, []uint32{0, 1, 2})
	if !equalCSR(g, want) {
		t.Errorf("decreasing map: got %+v", g)
	}
	if _, _, err := ReadIDGraph(context.Background(), path, IDGraphOptions{Nodes: 3, Dense: []int32{2, -1, -1, 0, -1, 2}}); err == nil {
		t.Error("a map giving a node twice: no error")
	}
}

type idRow struct {
	Src      int64 `parquet:"src_id"`
	Dst      int64 `parquet:"dst_id"`
	Nofollow bool  `parquet:"nofollow"`
}

func writeIDRows(t *testing.T, rows []idRow) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ids.parquet")
	if err := parquet.WriteFile(path, rows, parquet.MaxRowsPerRowGroup(2)); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadIDGraphContract: a file that breaks the contract of an edge
// file of ids is refused with an error naming the row, for any workers.
func TestReadIDGraphContract(t *testing.T) {
	for _, c := range []struct {
		name string
		rows []idRow
		want string
	}{
		{"unsorted", []idRow{{0, 1, false}, {2, 0, false}, {1, 2, false}}, "row 2: (src_id, dst_id) = (1, 2) out of order after (2, 0)"},
		{"unsorted across row groups", []idRow{{0, 1, false}, {2, 1, false}, {2, 0, false}, {3, 0, false}}, "row 2: (src_id, dst_id) = (2, 0)"},
		{"duplicate", []idRow{{0, 1, false}, {0, 1, true}}, "row 1: (src_id, dst_id) = (0, 1) repeated"},
		{"self-loop", []idRow{{0, 1, false}, {1, 1, false}}, "row 1: src_id = dst_id = 1: a self-loop"},
		{"negative", []idRow{{0, 1, false}, {1, -2, false}}, "row 1: dst_id is not an id"},
		{"too big", []idRow{{0, 1 << 33, false}}, "largest id, 8589934592, is not below"},
	} {
		path := writeIDRows(t, c.rows)
		for _, w := range []int{1, 2} {
			_, _, err := ReadIDGraph(context.Background(), path, IDGraphOptions{Workers: w})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s, workers %d: error %v, want one with %q", c.name, w, err, c.want)
			}
		}
	}
	// Nodes given: ids must be below it.
	path := writeIDRows(t, []idRow{{0, 1, false}, {1, 4, false}})
	if _, _, err := ReadIDGraph(context.Background(), path, IDGraphOptions{Nodes: 4}); err == nil || !strings.Contains(err.Error(), "row 1: (src_id, dst_id) = (1, 4): ids must be below 4") {
		t.Errorf("id out of range: %v", err)
	}
	// Columns.
	type named struct {
		Src string `parquet:"src"`
		Dst string `parquet:"dst"`
	}
	p := filepath.Join(t.TempDir(), "names.parquet")
	if err := parquet.WriteFile(p, []named{{"a.com", "b.com"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadIDGraph(context.Background(), p, IDGraphOptions{}); err == nil || !strings.Contains(err.Error(), `no "src_id" column`) {
		t.Errorf("no id columns: %v", err)
	}
}
