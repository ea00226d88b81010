package mapview

import (
	_ "embed"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"html/template"
	"image/color"
	"io"
	"math"
	"strings"
	"time"
)

//go:embed page.html.tmpl
var pageTemplate string

var page = template.Must(template.New("page").Parse(pageTemplate))

// DefaultHTMLPoints is how many points a page holds unless told otherwise:
// the best ranked. A browser parses and draws half a million points in well
// under a second; tens of millions would make a page of gigabytes.
const DefaultHTMLPoints = 500_000

// HTMLOptions shape the page.
type HTMLOptions struct {
	Color ColorBy // "" means tier
	// MaxPoints keeps only the best-ranked points when there are more;
	// 0 keeps all.
	MaxPoints int
}

// pageData is the JSON document the page's script reads from its
// <script type="application/json" id="mapdata"> element. Per-point columns
// are base64 little-endian typed arrays (every browser in use is little
// endian), in Map.Points order (best rank first): 200,000 points make about
// 6 MB of page, decoded in tens of milliseconds.
type pageData struct {
	Snapshot string       `json:"snapshot"`
	AsOf     time.Time    `json:"as_of"`
	Known    int64        `json:"known"`
	Placed   int          `json:"placed"` // placed in the snapshot; more than len(Names) when cut to MaxPoints
	ColorBy  ColorBy      `json:"color_by"`
	Legend   []legendJSON `json:"legend"`
	MaxRank  int64        `json:"max_rank"`
	Names    []string     `json:"names"`
	XY       string       `json:"xy"`     // float32 pairs: x, y (y up), centred on the bounds' middle
	Ranks    string       `json:"ranks"`  // int32; 0 = unranked
	Tiers    string       `json:"tiers"`  // uint8
	Colors   string       `json:"colors"` // uint8: index into legend
	Words    []wordsJSON  `json:"words"`
}

type legendJSON struct {
	Label string `json:"label"`
	Color string `json:"color"` // #rrggbb
}

// wordsJSON is one point's link words: [index, "word, word"], only for
// points that have some.
type wordsJSON [2]any

// WriteHTML writes one self-contained page to explore the map: every point
// embedded in the page, drawn on a canvas, pan and zoom, a tooltip and a
// search box. It needs no network.
//
// Outside text (domain names, link words, operators) only ever reaches the
// page inside the JSON data element: encoding/json escapes <, > and & there,
// so no string can close the element, and the script puts strings into the
// page with textContent, never as HTML.
func WriteHTML(w io.Writer, m *Map, o HTMLOptions) error {
	if len(m.Points) == 0 {
		return ErrNoPlacedDomains
	}
	placed := len(m.Points)
	if o.MaxPoints > 0 && placed > o.MaxPoints {
		cut := *m // MaxRank stays the whole map's, so sizes do not change
		cut.Points = m.Points[:o.MaxPoints]
		m = &cut
	}
	d := newPageData(m, m.colors(o.Color))
	d.Placed = placed
	raw, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encoding the page's data: %w", err)
	}
	err = page.Execute(w, struct {
		Snapshot string
		AsOf     string
		Data     template.JS
	}{m.Snapshot, m.AsOf.UTC().Format("2006-01-02 15:04 UTC"), template.JS(raw)})
	if err != nil {
		return fmt.Errorf("writing the page: %w", err)
	}
	return nil
}

func newPageData(m *Map, col coloring) pageData {
	n := len(m.Points)
	d := pageData{
		Snapshot: m.Snapshot, AsOf: m.AsOf.UTC(), Known: m.Known, ColorBy: col.By, MaxRank: m.MaxRank,
		Names: make([]string, n), Words: []wordsJSON{},
	}
	for _, e := range col.Legend {
		d.Legend = append(d.Legend, legendJSON{Label: e.Label, Color: hexColor(e.Color)})
	}
	b := m.bounds()
	ox, oy := (b.minX+b.maxX)/2, (b.minY+b.maxY)/2
	xy := make([]byte, 8*n)
	ranks := make([]byte, 4*n)
	tiers := make([]byte, n)
	for i, p := range m.Points {
		d.Names[i] = p.Domain
		binary.LittleEndian.PutUint32(xy[8*i:], math.Float32bits(float32(p.X-ox)))
		binary.LittleEndian.PutUint32(xy[8*i+4:], math.Float32bits(float32(p.Y-oy)))
		binary.LittleEndian.PutUint32(ranks[4*i:], uint32(min(p.Rank, math.MaxInt32)))
		tiers[i] = uint8(min(max(p.Tier, 0), 255))
		if len(p.Words) > 0 {
			d.Words = append(d.Words, wordsJSON{i, strings.Join(p.Words, ", ")})
		}
	}
	enc := base64.StdEncoding.EncodeToString
	d.XY, d.Ranks, d.Tiers, d.Colors = enc(xy), enc(ranks), enc(tiers), enc(col.Index)
	return d
}

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }
