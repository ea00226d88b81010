package snapshot

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// readMapPositionsAt and readCommunitiesAt read the file at path.
func readMapPositionsAt(path string, lookup func([]byte) int64, found func(int64, float64, float64)) (string, bool, error) {
	f, err := openPath(path)
	if err != nil {
		return "", false, err
	}
	defer f.Close()
	return readMapPositions(f, path, lookup, found)
}

func readCommunitiesAt(path string, match func(int32, []byte) int32, found func(int32, int32)) (bool, error) {
	f, err := openPath(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return readCommunities(f, path, match, found)
}

// prevRow is a domains.parquet row as far as MapPositions cares, with a
// column it must skip.
type prevRow struct {
	Domain string   `parquet:"domain,dict"`
	Rank   *int64   `parquet:"rank,optional"`
	MapX   *float64 `parquet:"map_x,optional"`
	MapY   *float64 `parquet:"map_y,optional"`
}

// writePrev writes rows into a Parquet file in row groups of 7 rows and
// small pages, with the fingerprint entry when print is not "".
func writePrev[T any](t *testing.T, rows []T, print string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "domains.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	opts := []parquet.WriterOption{parquet.MaxRowsPerRowGroup(7), parquet.PageBufferSize(64)}
	if print != "" {
		opts = append(opts, parquet.KeyValueMetadata(MapFingerprintKey, print))
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
	return path
}

// TestMapPositions: the positions of the wanted domains that have finite
// ones, across row groups and pages, and the fingerprint entry; files of
// another kind are errors.
func TestMapPositions(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	var rows []prevRow
	want := map[int64][2]float64{}
	for i := range 40 {
		r := prevRow{Domain: fmt.Sprintf("d%02d.example", i), MapX: f(float64(i)), MapY: f(-float64(i))}
		switch i % 5 {
		case 1:
			r.MapX, r.MapY = nil, nil // unranked: no position
		case 2:
			r.MapY = f(math.Inf(1))
		case 3:
			r.MapX = f(math.NaN())
		}
		if i%5 != 1 {
			r.Rank = new(int64)
		}
		rows = append(rows, r)
		if i%5 != 1 && i%5 != 2 && i%5 != 3 && i%2 == 0 { // finite and wanted
			want[int64(i)] = [2]float64{float64(i), -float64(i)}
		}
	}
	lookup := func(name []byte) int64 {
		var i int64
		if _, err := fmt.Sscanf(string(name), "d%02d.example", &i); err != nil || i%2 != 0 {
			return -1
		}
		return i
	}
	for _, print := range []string{"", "0123456789abcdef"} {
		path := writePrev(t, rows, print)
		got := map[int64][2]float64{}
		text, ok, err := readMapPositionsAt(path, lookup, func(v int64, x, y float64) { got[v] = [2]float64{x, y} })
		if err != nil {
			t.Fatal(err)
		}
		if text != print || ok != (print != "") {
			t.Errorf("fingerprint %q, %v; want %q", text, ok, print)
		}
		if !maps.Equal(got, want) {
			t.Errorf("positions %v, want %v", got, want)
		}
	}

	type stringMap struct {
		Domain string `parquet:"domain"`
		MapX   string `parquet:"map_x"`
		MapY   string `parquet:"map_y"`
	}
	type noMap struct {
		Domain string `parquet:"domain"`
	}
	garbage := filepath.Join(t.TempDir(), "garbage.parquet")
	if err := os.WriteFile(garbage, []byte("PAR1 this is not a Parquet file PAR1"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{
		"map as text": writePrev(t, []stringMap{{"a.example", "1", "2"}}, ""),
		"no map":      writePrev(t, []noMap{{"a.example"}}, ""),
		"garbage":     garbage,
	} {
		_, _, err := readMapPositionsAt(path, lookup, func(int64, float64, float64) {})
		if !errors.Is(err, ErrNotParquet) {
			t.Errorf("%s: %v, want ErrNotParquet", name, err)
		}
	}
}

// prevCommunityRow is a domains.parquet row as far as Communities cares,
// with a column it must skip.
type prevCommunityRow struct {
	ID        int32  `parquet:"id"`
	Domain    string `parquet:"domain"`
	Rank      *int64 `parquet:"rank,optional"`
	Community *int32 `parquet:"community,optional"`
}

// TestCommunities: rows are matched by store id, and the name must agree
// (the rebuild's match: the id still in the store, under the same name);
// a file without the column is none, no error.
func TestCommunities(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	names := []string{"a.example", "b.example", "c.example", "d.example"}
	dense := []int32{0, 1, -1, 2, 3} // store id → index into names
	match := func(id int32, name []byte) int32 {
		if int(id) >= len(dense) || dense[id] < 0 || string(name) != names[dense[id]] {
			return -1
		}
		return dense[id]
	}
	rows := []prevCommunityRow{
		{ID: 0, Domain: "a.example", Community: i32(5)},
		{ID: 1, Domain: "b.example"},                        // no community
		{ID: 2, Domain: "gone.example", Community: i32(9)},  // id no longer in the store
		{ID: 3, Domain: "other.example", Community: i32(4)}, // id of another name: another store
		{ID: 4, Domain: "d.example", Community: i32(12)},
		{ID: 99, Domain: "x.example", Community: i32(1)}, // beyond the store's ids
	}
	for range 3 { // more than one row group (writePrev makes groups of 7)
		rows = append(rows, prevCommunityRow{ID: 2, Domain: "gone.example"})
	}
	got := []int32{-1, -1, -1, -1}
	ok, err := readCommunitiesAt(writePrev(t, rows, ""), match, func(i, c int32) { got[i] = c })
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if want := []int32{5, -1, -1, 12}; !slices.Equal(got, want) {
		t.Errorf("previous communities %v, want %v", got, want)
	}

	// A snapshot written before the column existed: none, no error.
	ok, err = readCommunitiesAt(writePrev(t, []prevRow{{Domain: "a.example"}}, ""), match, func(int32, int32) { t.Error("found one") })
	if err != nil || ok {
		t.Errorf("no community column: %v, %v; want false, nil", ok, err)
	}
}
