package edgefile

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
)

// TestSortByName: the ids come out in their names' byte order, long
// shared prefixes, short names and bytes above 0x7f included, for any
// workers.
func TestSortByName(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var names []string
	for i := range 200_000 {
		switch i % 4 {
		case 0:
			names = append(names, fmt.Sprintf("sameprefix-%d.com", r.IntN(1e9)))
		case 1:
			names = append(names, fmt.Sprintf("%c", 'a'+i%26)+strings.Repeat("x", i%3)+fmt.Sprint(i))
		case 2:
			names = append(names, fmt.Sprintf("d%d.com", i))
		default:
			names = append(names, "\xe4"+fmt.Sprint(r.IntN(1e9), i))
		}
	}
	nms, err := NamesOf(names)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []int{1, 2} {
		ids := make([]uint32, len(names))
		for i := range ids {
			ids[i] = uint32(i)
		}
		r.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
		sortByName(ids, nms, w)
		if !slices.IsSortedFunc(ids, func(a, b uint32) int { return strings.Compare(names[a], names[b]) }) {
			t.Fatalf("workers %d: not in name order", w)
		}
	}
}

// TestWriteRanksParts: a rank file of several parts (encoded on their own
// by encoders reused part after part) has every row where it belongs,
// ranked ones first by rank, then the others by name, and is the same
// byte for byte for any workers.
func TestWriteRanksParts(t *testing.T) {
	const n = 2*writePartRows + 12_345
	names, tab := randomRanked(t, n)
	scores, out, order, in := tab.Scores, tab.OutDomains, tab.Order, tab.InDomains
	var first []byte
	for _, w := range []int{1, 2, 3} {
		path := filepath.Join(t.TempDir(), "ranks.parquet")
		if err := WriteRanks(path, tab, w); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if w > 1 {
			if !bytes.Equal(b, first) {
				t.Fatalf("workers %d: a different file from workers 1's", w)
			}
			continue
		}
		first = b
		rows, err := parquet.ReadFile[data.RankRow](path)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != n {
			t.Fatalf("%d rows, want %d", len(rows), n)
		}
		id := make(map[string]uint32, n)
		var unranked []string
		for v, name := range names {
			id[name] = uint32(v)
			if v%3 == 0 {
				unranked = append(unranked, name)
			}
		}
		slices.Sort(unranked)
		for i, row := range rows {
			v := id[row.Domain]
			want := data.RankRow{Domain: names[v], Score: scores[v], InDomains: int64(in(v)), OutDomains: int64(out[v])}
			if i < len(order) {
				want.Domain, want.Rank = names[order[i]], int64(i+1)
			} else {
				want.Domain = unranked[i-len(order)]
			}
			if row != want {
				t.Fatalf("row %d: %+v, want %+v", i, row, want)
			}
		}
	}
}

// randomRanked is a Ranked of n domains of random names, scores and
// out-domains, every third unranked, the others ranked in random order
// (as PageRank's is to ids), and the names by id.
func randomRanked(tb testing.TB, n int) ([]string, Ranked) {
	r := rand.New(rand.NewPCG(3, 4))
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("d%x-%d.example", r.Uint32(), i)
	}
	nms, err := NamesOf(names)
	if err != nil {
		tb.Fatal(err)
	}
	scores, out := make([]float64, n), make([]uint32, n)
	order := make([]uint32, 0, n)
	for v := range n {
		scores[v], out[v] = r.Float64(), uint32(r.IntN(100))
		if v%3 != 0 {
			order = append(order, uint32(v))
		}
	}
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	in := func(v uint32) uint32 {
		if v%3 == 0 {
			return 0
		}
		return v%7 + 1
	}
	return names, Ranked{Names: nms, Scores: scores, OutDomains: out, Order: order, InDomains: in}
}
