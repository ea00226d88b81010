package mapview

import (
	"cmp"
	"fmt"
	"image/color"
	"slices"
	"strings"

	"github.com/mapthenet/mapthenet/data"
)

// ColorBy says what a point's colour shows.
type ColorBy string

// The colourings `map --color` offers.
const (
	ColorCommunity ColorBy = "community" // community of the link graph (domains.parquet's community)
	ColorTier      ColorBy = "tier"      // revisit tier (by rank)
	ColorTLD       ColorBy = "tld"       // top-level domain, the most common ones
	ColorOperator  ColorBy = "operator"  // network operator, the most common ones
)

// ParseColorBy checks a --color value.
func ParseColorBy(s string) (ColorBy, error) {
	switch c := ColorBy(s); c {
	case ColorCommunity, ColorTier, ColorTLD, ColorOperator:
		return c, nil
	}
	return "", fmt.Errorf("colour by %q: want community, tier, tld or operator", s)
}

// LegendEntry is one colour of the legend and what it means.
type LegendEntry struct {
	Label string
	Color color.RGBA
}

// Palettes. The tiers run from warm (revisited often) to grey (yearly);
// categories use Tableau 10, whose colours stay apart for most colour
// vision, with its grey kept for "other".
var (
	tierPalette = []color.RGBA{
		{0xd6, 0x27, 0x28, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0xbc, 0xbd, 0x22, 0xff},
		{0x2c, 0xa0, 0x2c, 0xff}, {0x1f, 0x77, 0xb4, 0xff}, {0x9a, 0x9a, 0x9a, 0xff},
	}
	categoryPalette = []color.RGBA{
		{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
		{0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
		{0xe3, 0x77, 0xc2, 0xff}, {0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
	}
	otherColor = color.RGBA{0xa0, 0xa0, 0xa0, 0xff}
	// communityPalette: Tableau 20's colours, the strong ones first, so
	// that the biggest communities get the most distinct colours.
	communityPalette = []color.RGBA{
		{0x1f, 0x77, 0xb4, 0xff}, {0xff, 0x7f, 0x0e, 0xff}, {0x2c, 0xa0, 0x2c, 0xff},
		{0xd6, 0x27, 0x28, 0xff}, {0x94, 0x67, 0xbd, 0xff}, {0x8c, 0x56, 0x4b, 0xff},
		{0xe3, 0x77, 0xc2, 0xff}, {0xbc, 0xbd, 0x22, 0xff}, {0x17, 0xbe, 0xcf, 0xff},
		{0xae, 0xc7, 0xe8, 0xff}, {0xff, 0xbb, 0x78, 0xff}, {0x98, 0xdf, 0x8a, 0xff},
		{0xff, 0x98, 0x96, 0xff}, {0xc5, 0xb0, 0xd5, 0xff}, {0xc4, 0x9c, 0x94, 0xff},
		{0xf7, 0xb6, 0xd2, 0xff}, {0xdb, 0xdb, 0x8d, 0xff}, {0x9e, 0xda, 0xe5, 0xff},
	}
)

// CommunityLegendDomains is how many of a community's best-ranked domains
// name it in the legend.
const CommunityLegendDomains = 3

// coloring is a legend and, per point (in Map.Points order), the index of
// its legend entry.
type coloring struct {
	By     ColorBy
	Legend []LegendEntry
	Index  []uint8
}

// colors colours the map's points.
func (m *Map) colors(by ColorBy) coloring {
	c := coloring{By: by, Index: make([]uint8, len(m.Points))}
	switch by {
	case ColorCommunity:
		c.communities(m)
	case ColorTLD:
		c.categories(m, func(p *Point) string { return tld(p.Domain) }, "other TLDs")
	case ColorOperator:
		c.categories(m, func(p *Point) string {
			if p.Operator == "" {
				return "(unknown)"
			}
			return p.Operator
		}, "other operators")
	default:
		c.By = ColorTier
		c.tiers(m)
	}
	return c
}

// Coloring colours the map's points by: the legend, and per point (in
// Points order) the index of its legend entry. An unknown by colours by
// tier.
func (m *Map) Coloring(by ColorBy) (ColorBy, []LegendEntry, []uint8) {
	c := m.colors(by)
	return c.By, c.Legend, c.Index
}

// communities gives the biggest communities among the points their own
// colour, each named in the legend by its best-ranked domains (points come
// best rank first, so a community's first points are its top); the others,
// and the points of no community, share one grey entry.
func (c *coloring) communities(m *Map) {
	type comm struct {
		id    int32
		count int
		top   []string
	}
	byID := map[int32]*comm{}
	for i := range m.Points {
		p := &m.Points[i]
		if p.Community < 0 {
			continue
		}
		k := byID[p.Community]
		if k == nil {
			k = &comm{id: p.Community}
			byID[p.Community] = k
		}
		k.count++
		if len(k.top) < CommunityLegendDomains {
			k.top = append(k.top, p.Domain)
		}
	}
	all := make([]*comm, 0, len(byID))
	for _, k := range byID {
		all = append(all, k)
	}
	slices.SortFunc(all, func(a, b *comm) int {
		if d := cmp.Compare(b.count, a.count); d != 0 {
			return d
		}
		return cmp.Compare(a.id, b.id)
	})
	own := map[int32]uint8{}
	for i, k := range all[:min(len(all), len(communityPalette))] {
		own[k.id] = uint8(i)
		c.Legend = append(c.Legend, LegendEntry{Label: fmt.Sprintf("%s (%d)", strings.Join(k.top, ", "), k.count), Color: communityPalette[i]})
	}
	rest := 0
	for i := range m.Points {
		if j, ok := own[m.Points[i].Community]; ok && m.Points[i].Community >= 0 {
			c.Index[i] = j
		} else {
			c.Index[i] = uint8(len(own))
			rest++
		}
	}
	if rest > 0 {
		label := "other communities"
		if len(all) == 0 {
			label = "no community"
		}
		c.Legend = append(c.Legend, LegendEntry{Label: fmt.Sprintf("%s (%d)", label, rest), Color: otherColor})
	}
}

// tiers gives each tier present among the points its colour, with its rank
// range and count; a tier number the table lacks counts as the last tier.
func (c *coloring) tiers(m *Map) {
	row := make([]int, len(m.Points)) // index into m.Tiers
	counts := make([]int, len(m.Tiers))
	for i, p := range m.Points {
		t := int(p.Tier) - 1
		if t < 0 || t >= len(m.Tiers) {
			t = len(m.Tiers) - 1
		}
		row[i] = t
		counts[t]++
	}
	entry := make([]uint8, len(m.Tiers))
	for i, t := range m.Tiers {
		if counts[i] == 0 {
			continue
		}
		var label string
		switch {
		case t.MaxRank == 0:
			label = fmt.Sprintf("tier %d: rank above %s, unranked", t.Number, shortCount(prevMax(m.Tiers, i)))
		case i == 0:
			label = fmt.Sprintf("tier %d: rank 1–%s", t.Number, shortCount(t.MaxRank))
		default:
			label = fmt.Sprintf("tier %d: rank %s–%s", t.Number, shortCount(prevMax(m.Tiers, i)), shortCount(t.MaxRank))
		}
		// Tier tables have a handful of rows; past 256 present ones, the
		// rest share the last entry.
		entry[i] = uint8(min(len(c.Legend), 255))
		if len(c.Legend) < 256 {
			c.Legend = append(c.Legend, LegendEntry{Label: fmt.Sprintf("%s (%d)", label, counts[i]), Color: tierPalette[min(i, len(tierPalette)-1)]})
		}
	}
	for i := range m.Points {
		c.Index[i] = entry[row[i]]
	}
}

func prevMax(t data.TierTable, i int) int64 {
	if i == 0 {
		return 0
	}
	return t[i-1].MaxRank
}

// categories gives the most common values their own colour (ties by name)
// and the rest one grey entry.
func (c *coloring) categories(m *Map, key func(*Point) string, other string) {
	counts := map[string]int{}
	keys := make([]string, len(m.Points))
	for i := range m.Points {
		keys[i] = key(&m.Points[i])
		counts[keys[i]]++
	}
	names := make([]string, 0, len(counts))
	for k := range counts {
		names = append(names, k)
	}
	slices.SortFunc(names, func(a, b string) int {
		if d := cmp.Compare(counts[b], counts[a]); d != 0 {
			return d
		}
		return cmp.Compare(a, b)
	})
	own := map[string]uint8{}
	for i, n := range names {
		if i == len(categoryPalette) && len(names) > len(categoryPalette) {
			break
		}
		own[n] = uint8(i)
		c.Legend = append(c.Legend, LegendEntry{Label: fmt.Sprintf("%s (%d)", n, counts[n]), Color: categoryPalette[i]})
	}
	if len(names) > len(own) {
		rest := 0
		for _, n := range names[len(own):] {
			rest += counts[n]
		}
		c.Legend = append(c.Legend, LegendEntry{Label: fmt.Sprintf("%s (%d)", other, rest), Color: otherColor})
	}
	for i, k := range keys {
		if j, ok := own[k]; ok {
			c.Index[i] = j
		} else {
			c.Index[i] = uint8(len(c.Legend) - 1)
		}
	}
}

// tld is a domain's last label.
func tld(domain string) string {
	if i := strings.LastIndexByte(domain, '.'); i >= 0 {
		return "." + domain[i+1:]
	}
	return domain
}

// shortCount writes 100000 as 100k and 2000000 as 2M.
func shortCount(n int64) string {
	switch {
	case n >= 1_000_000 && n%100_000 == 0:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e6)) + "M"
	case n >= 1_000 && n%100 == 0:
		return trimZero(fmt.Sprintf("%.1f", float64(n)/1e3)) + "k"
	}
	return fmt.Sprint(n)
}

func trimZero(s string) string { return strings.TrimSuffix(s, ".0") }
