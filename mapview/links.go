package mapview

import (
	"fmt"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// Links are the followed links a picture draws, between placed domains
// (indices into the Map's Points, which come best rank first): every
// link among the best-ranked Top, and the number of links between each
// two communities.
type Links struct {
	Top   int        // the domains whose links among themselves Pairs holds
	Pairs [][2]int32 // links among Points[:Top], in the file's order
	// Between counts the links between two communities (keyed by the
	// smaller community id first), for the bundles drawn between them.
	Between map[[2]int32]int64
	Total   int64 // followed links between placed domains
}

// DefaultLinkTop is how many of the best-ranked domains' links among
// themselves a picture draws.
const DefaultLinkTop = 20_000

// LoadLinks reads the followed links of snapshot s between domains of m
// (Load's map of it): those among the best-ranked top, and the count
// between each two communities. It reads three columns of edges.parquet
// and two of domains.parquet, not whole rows: ten million links in a few
// seconds.
func LoadLinks(s *snapshot.Snapshot, m *Map, top int) (*Links, error) {
	// Store id → point: a placed domain is ranked, and points are sorted
	// by rank, so Points[rank-1] is the domain of that rank.
	var point []int32
	err := snapshot.EachColumns(s.Files, data.DomainsFile, func(rows []domainIDRank) error {
		for _, r := range rows {
			if r.ID < 0 || r.Rank == nil || *r.Rank < 1 || *r.Rank > int64(len(m.Points)) || m.Points[*r.Rank-1].Rank != *r.Rank {
				continue
			}
			for int(r.ID) >= len(point) {
				point = append(point, -1)
			}
			point[r.ID] = int32(*r.Rank - 1)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", s.ID, err)
	}
	l := NewLinks(m, top)
	pointOf := func(id int32) int32 {
		if id < 0 || int(id) >= len(point) {
			return -1
		}
		return point[id]
	}
	err = snapshot.EachColumns(s.Files, data.EdgesFile, func(rows []edgeIDs) error {
		for _, r := range rows {
			if r.Nofollow {
				continue
			}
			l.Add(m, pointOf(r.SrcID), pointOf(r.DstID))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", s.ID, err)
	}
	return l, nil
}

// NewLinks is an empty Links of m, keeping the pairs among its top
// domains.
func NewLinks(m *Map, top int) *Links {
	return &Links{Top: min(max(top, 0), len(m.Points)), Between: map[[2]int32]int64{}}
}

// Add counts a followed link from point a to point b of m (indices into
// m.Points; a negative one, or a link to itself, is not counted).
func (l *Links) Add(m *Map, a, b int32) {
	if a < 0 || b < 0 || a == b || int(a) >= len(m.Points) || int(b) >= len(m.Points) {
		return
	}
	l.Total++
	if int(a) < l.Top && int(b) < l.Top {
		l.Pairs = append(l.Pairs, [2]int32{a, b})
	}
	ca, cb := m.Points[a].Community, m.Points[b].Community
	if ca >= 0 && cb >= 0 && ca != cb {
		l.Between[[2]int32{min(ca, cb), max(ca, cb)}]++
	}
}

// domainIDRank and edgeIDs are the columns LoadLinks reads.
type domainIDRank struct {
	ID   int32  `parquet:"id"`
	Rank *int64 `parquet:"rank,optional"`
}

type edgeIDs struct {
	SrcID    int32 `parquet:"src_id"`
	DstID    int32 `parquet:"dst_id"`
	Nofollow bool  `parquet:"nofollow"`
}
