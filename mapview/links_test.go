package mapview

import (
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// TestLoadLinks: the followed links between placed domains, those among
// the top two as pairs of points, and the count between communities;
// nofollow links, links to an unplaced domain or an unknown id and
// self-links are left out.
func TestLoadLinks(t *testing.T) {
	dir := t.TempDir()
	// Store ids 10..14: ranks 3, 1, 2, unranked and unplaced, rank 4;
	// communities 7, 7, 8, -, 8.
	var rows []data.DomainRow
	for i, c := range []struct {
		rank  int64
		comm  int32
		place bool
	}{{3, 7, true}, {1, 7, true}, {2, 8, true}, {0, -1, false}, {4, 8, true}} {
		r := data.DomainRow{ID: int32(10 + i), Domain: string(rune('a'+i)) + ".example", FirstSeen: fixtureAsOf}
		if c.rank > 0 {
			r.Rank = &c.rank
		}
		if c.comm >= 0 {
			r.Community = &c.comm
		}
		if c.place {
			x, y := float64(i), float64(-i)
			r.MapX, r.MapY = &x, &y
		}
		rows = append(rows, r)
	}
	edge := func(src, dst int32, nofollow bool) data.EdgeRow {
		return data.EdgeRow{Src: "x", Dst: "y", SrcID: src, DstID: dst, FirstSeen: fixtureAsOf, LastSeen: fixtureAsOf, Nofollow: nofollow}
	}
	s := writeSnapshotEdges(t, dir, rows, nil, []data.EdgeRow{
		edge(10, 11, false), // rank 3 → 1, community 7 → 7
		edge(11, 12, false), // rank 1 → 2: among the top two; 7 → 8
		edge(12, 11, true),  // nofollow
		edge(12, 13, false), // to an unplaced domain
		edge(14, 10, false), // rank 4 → 3; 8 → 7
		edge(14, 99, false), // an unknown id
		edge(11, 11, false), // a self-link
	})
	m, err := Load(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	l, err := LoadLinks(s, m, 2)
	if err != nil {
		t.Fatal(err)
	}
	if l.Total != 3 || l.Top != 2 || !slices.Equal(l.Pairs, [][2]int32{{0, 1}}) {
		t.Errorf("links %+v: want 3 in all and the pair of points 0 → 1", l)
	}
	if len(l.Between) != 1 || l.Between[[2]int32{7, 8}] != 2 {
		t.Errorf("between communities %v, want 7–8: 2", l.Between)
	}

	// A damaged edges file: an error that says so.
	if err := os.WriteFile(snapshot.Local(dir).Location(s.ID, data.EdgesFile), []byte("PAR1 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadLinks(s, m, 2); !errors.Is(err, snapshot.ErrNotParquet) {
		t.Errorf("damaged edges.parquet: %v, want ErrNotParquet", err)
	}
}
