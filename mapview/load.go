package mapview

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/rebuild"
)

// ErrNoPlacedDomains: the snapshot has no domain with a map position (the
// layout placed none, or the snapshot is empty).
var ErrNoPlacedDomains = errors.New("no placed domains: the snapshot has no map positions (map_x, map_y)")

// DefaultWords is how many link words per domain a Map keeps.
const DefaultWords = 3

// Point is one placed domain.
type Point struct {
	Domain   string
	X, Y     float64
	Rank     int64 // 1 = top; 0 = unranked
	Tier     int32
	Operator string // network operator; "" when unknown
	// Community is the domain's community (domains.parquet's community);
	// -1 when it has none.
	Community int32
	Words     []string
}

// Map is what both outputs draw: a snapshot's placed domains, best rank
// first (unranked last, by name), so that drawing them in reverse puts the
// top on top and labelling them in order labels the top first.
type Map struct {
	Snapshot string
	AsOf     time.Time
	Tiers    data.TierTable
	Known    int64 // domains in the snapshot, placed or not
	Points   []Point
	MaxRank  int64 // the largest rank among the points (0 when none is ranked)
}

// Load reads the placed domains of a snapshot and up to words link words
// for each (the most used first). It streams domains.parquet and
// link_words.parquet once each, keeping only placed domains. A position
// that is not finite counts as not placed.
func Load(s *rebuild.Snapshot, words int) (*Map, error) {
	c := newCollector(s.ID, s.Manifest.AsOf, s.Manifest.Tiers, words)
	err := s.EachDomain(func(rows []data.DomainRow) error {
		for i := range rows {
			c.domain(&rows[i])
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s: %w", s.ID, err)
	}
	if len(c.m.Points) == 0 {
		return nil, fmt.Errorf("snapshot %s (%d domains): %w", s.ID, c.m.Known, ErrNoPlacedDomains)
	}
	if words > 0 {
		err := s.EachLinkWord(func(rows []data.LinkWordRow) error {
			for i := range rows {
				c.word(&rows[i])
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("snapshot %s: %w", s.ID, err)
		}
	}
	return c.finish(), nil
}

// collector builds a Map from rows as they stream by.
type collector struct {
	m     *Map
	idx   map[string]int // domain → index in m.Points
	limit int            // link words kept per domain
	uses  map[int][]wordUse
}

type wordUse struct {
	word  string
	sites int64
}

func newCollector(id string, asOf time.Time, tiers data.TierTable, words int) *collector {
	if len(tiers) == 0 {
		tiers = data.DefaultTiers
	}
	return &collector{
		m:   &Map{Snapshot: id, AsOf: asOf, Tiers: tiers},
		idx: map[string]int{}, limit: words, uses: map[int][]wordUse{},
	}
}

func (c *collector) domain(r *data.DomainRow) {
	c.m.Known++
	if r.MapX == nil || r.MapY == nil || !finite(*r.MapX) || !finite(*r.MapY) {
		return
	}
	p := Point{Domain: r.Domain, X: *r.MapX, Y: *r.MapY, Tier: r.Tier, Community: -1}
	if r.Community != nil {
		p.Community = *r.Community
	}
	if r.Rank != nil && *r.Rank > 0 {
		p.Rank = *r.Rank
		c.m.MaxRank = max(c.m.MaxRank, p.Rank)
	}
	if r.NetworkOperator != nil {
		p.Operator = *r.NetworkOperator
	}
	c.idx[r.Domain] = len(c.m.Points)
	c.m.Points = append(c.m.Points, p)
}

func (c *collector) word(r *data.LinkWordRow) {
	if i, ok := c.idx[r.Domain]; ok {
		c.uses[i] = append(c.uses[i], wordUse{r.Word, r.Sites})
	}
}

// finish keeps the most used words per domain (ties by word) and sorts the
// points by rank.
func (c *collector) finish() *Map {
	for i, us := range c.uses {
		slices.SortFunc(us, func(a, b wordUse) int {
			if d := cmp.Compare(b.sites, a.sites); d != 0 {
				return d
			}
			return cmp.Compare(a.word, b.word)
		})
		for _, u := range us[:min(c.limit, len(us))] {
			c.m.Points[i].Words = append(c.m.Points[i].Words, u.word)
		}
	}
	slices.SortFunc(c.m.Points, comparePoints)
	return c.m
}

// comparePoints orders by rank, unranked last, then by name.
func comparePoints(a, b Point) int {
	switch {
	case a.Rank == b.Rank:
		return cmp.Compare(a.Domain, b.Domain)
	case a.Rank == 0:
		return 1
	case b.Rank == 0:
		return -1
	}
	return cmp.Compare(a.Rank, b.Rank)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// bounds is the smallest rectangle holding every point.
type bounds struct{ minX, minY, maxX, maxY float64 }

func (m *Map) bounds() bounds {
	b := bounds{math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)}
	for _, p := range m.Points {
		b.minX, b.maxX = min(b.minX, p.X), max(b.maxX, p.X)
		b.minY, b.maxY = min(b.minY, p.Y), max(b.maxY, p.Y)
	}
	return b
}

// sizeWeight is how big a point is drawn, from 0 (unranked or the last
// rank) to 1 (rank 1): log-scaled, since ranks span orders of magnitude and
// only the top few hundred should stand out.
func (m *Map) sizeWeight(rank int64) float64 {
	if rank <= 0 || m.MaxRank <= 1 {
		if rank == 1 {
			return 1
		}
		return 0
	}
	w := 1 - math.Log(float64(rank))/math.Log(float64(m.MaxRank)+1)
	return w * w
}
