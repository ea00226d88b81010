package site

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"slices"
	"time"

	"github.com/mapthenet/mapthenet/mapview"
)

// mapOptions shape the map's payloads.
type mapOptions struct {
	// Communities is how many communities (the biggest) the map names and
	// joins with bundles.
	Communities int
	// Bundles is how many of the strongest links between those
	// communities the map draws.
	Bundles int
}

func (o mapOptions) withDefaults() mapOptions {
	if o.Communities <= 0 {
		o.Communities = 200
	}
	if o.Bundles <= 0 {
		o.Bundles = 300
	}
	return o
}

// colorings are the map's colourings, the default first.
var colorings = []mapview.ColorBy{mapview.ColorCommunity, mapview.ColorTier, mapview.ColorTLD, mapview.ColorOperator}

// mapPayload is what the browser map loads, each part compressed once when
// the snapshot is loaded: meta (JSON: legends, communities, bundles, the
// layout of points), points (binary columns: typed arrays the page uses
// as they are) and names (one name a line), all in map order.
type mapPayload struct {
	meta, points, names blob
	placed              int
}

// blob is a response body kept gzip-compressed, with its raw size.
type blob struct {
	gz   []byte
	size int
}

func gzipBlob(raw []byte) (blob, error) {
	var b bytes.Buffer
	b.Grow(len(raw) / 2)
	w, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if err != nil {
		return blob{}, err
	}
	if _, err := w.Write(raw); err != nil {
		return blob{}, err
	}
	if err := w.Close(); err != nil {
		return blob{}, err
	}
	return blob{gz: slices.Clip(b.Bytes()), size: len(raw)}, nil
}

// mapMeta is meta.json (DESIGN.md, "serve": the JSON API).
type mapMeta struct {
	Snapshot    string                  `json:"snapshot"`
	AsOf        time.Time               `json:"as_of"`
	Known       int                     `json:"known"`
	Placed      int                     `json:"placed"`
	MaxRank     int32                   `json:"max_rank"`
	Bounds      [4]float32              `json:"bounds"` // min x, min y, max x, max y of the points
	Colorings   []mapColoring           `json:"colorings"`
	Sections    map[string]section      `json:"sections"` // parts of points.bin
	Bytes       int                     `json:"bytes"`    // points.bin's length
	Communities []mapCommunity          `json:"communities"`
	Bundles     [][3]float64            `json:"bundles"` // [community a, community b (indexes into communities), links]
	Tiers       map[string]tierInfoJSON `json:"tiers"`
}

type tierInfoJSON struct {
	MaxRank     int64 `json:"max_rank"`
	RevisitDays int   `json:"revisit_days"`
}

type mapColoring struct {
	By     mapview.ColorBy `json:"by"`
	Legend []legendEntry   `json:"legend"`
}

type legendEntry struct {
	Label string `json:"label"`
	Color string `json:"color"` // #rrggbb
}

// section is a typed array inside points.bin: its byte offset, element
// type and length.
type section struct {
	Offset int    `json:"offset"`
	Type   string `json:"type"` // float32, uint32, uint8
	Length int    `json:"length"`
}

// mapCommunity is one of the biggest communities: where its placed
// members' centre is, how many there are, and its best-ranked domains.
type mapCommunity struct {
	ID   int32    `json:"id"`
	X    float32  `json:"x"`
	Y    float32  `json:"y"`
	Size int32    `json:"size"`
	Top  []string `json:"top"`
}

func buildMap(ix *Index, xs, ys []float64, o mapOptions) (*mapPayload, error) {
	o = o.withDefaults()
	ix.point = make([]int32, ix.n)
	var rows []int32
	for _, r := range ix.order {
		ix.point[r] = -1
		if !math.IsNaN(xs[r]) {
			ix.point[r] = int32(len(rows))
			rows = append(rows, r)
		}
	}
	n := len(rows)
	meta := mapMeta{Snapshot: ix.ID, AsOf: ix.AsOf.UTC(), Known: ix.n, Placed: n, Sections: map[string]section{},
		Communities: []mapCommunity{}, Bundles: [][3]float64{}, Tiers: map[string]tierInfoJSON{}}
	for _, t := range ix.Tiers {
		meta.Tiers[fmt.Sprint(t.Number)] = tierInfoJSON{t.MaxRank, t.RevisitDays}
	}
	// Positions are sent relative to the middle of the points, as float32:
	// world coordinates of any size keep their precision near the points.
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, r := range rows {
		minX, maxX = min(minX, xs[r]), max(maxX, xs[r])
		minY, maxY = min(minY, ys[r]), max(maxY, ys[r])
	}
	ox, oy := (minX+maxX)/2, (minY+maxY)/2
	if n == 0 {
		ox, oy, minX, minY, maxX, maxY = 0, 0, 0, 0, 0, 0
	}
	meta.Bounds = [4]float32{float32(minX - ox), float32(minY - oy), float32(maxX - ox), float32(maxY - oy)}

	bin := make([]byte, 0, n*(12+len(colorings)))
	meta.Sections["xy"] = section{len(bin), "float32", 2 * n}
	for _, r := range rows {
		bin = binary.LittleEndian.AppendUint32(bin, math.Float32bits(float32(xs[r]-ox)))
		bin = binary.LittleEndian.AppendUint32(bin, math.Float32bits(float32(ys[r]-oy)))
	}
	meta.Sections["rank"] = section{len(bin), "uint32", n}
	for _, r := range rows {
		bin = binary.LittleEndian.AppendUint32(bin, uint32(ix.rank[r]))
		meta.MaxRank = max(meta.MaxRank, ix.rank[r])
	}
	// The colourings, through mapview's (one way of colouring a map).
	vm := &mapview.Map{Snapshot: ix.ID, AsOf: ix.AsOf, Tiers: ix.Tiers, Known: int64(ix.n), Points: make([]mapview.Point, n)}
	for i, r := range rows {
		vm.Points[i] = mapview.Point{Domain: ix.names[r], Rank: int64(ix.rank[r]), Tier: int32(ix.tier[r]),
			Operator: ix.strs[ix.operator[r]], Community: ix.community[r]}
	}
	for _, by := range colorings {
		got, legend, index := vm.Coloring(by)
		c := mapColoring{By: got}
		for _, e := range legend {
			c.Legend = append(c.Legend, legendEntry{e.Label, hexColor(e.Color)})
		}
		meta.Colorings = append(meta.Colorings, c)
		meta.Sections["color_"+string(got)] = section{len(bin), "uint8", n}
		bin = append(bin, index...)
	}
	vm = nil
	meta.Bytes = len(bin)
	meta.Communities, meta.Bundles = ix.communityMap(rows, xs, ys, ox, oy, o)

	var names bytes.Buffer
	for _, r := range rows {
		names.WriteString(ix.names[r])
		names.WriteByte('\n')
	}
	rawMeta, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	p := &mapPayload{placed: n}
	if p.meta, err = gzipBlob(rawMeta); err != nil {
		return nil, err
	}
	if p.points, err = gzipBlob(bin); err != nil {
		return nil, err
	}
	if p.names, err = gzipBlob(names.Bytes()); err != nil {
		return nil, err
	}
	return p, nil
}

// communityMap places the biggest communities (by placed members) at
// their members' centre and finds the strongest links between them: the
// followed links from one to another, counted both ways.
func (ix *Index) communityMap(rows []int32, xs, ys []float64, ox, oy float64, o mapOptions) ([]mapCommunity, [][3]float64) {
	type acc struct {
		sx, sy float64
		n      int32
	}
	sums := map[int32]*acc{}
	for _, r := range rows {
		c := ix.community[r]
		if c < 0 {
			continue
		}
		a := sums[c]
		if a == nil {
			a = &acc{}
			sums[c] = a
		}
		a.sx, a.sy, a.n = a.sx+xs[r], a.sy+ys[r], a.n+1
	}
	ids := make([]int32, 0, len(sums))
	for c := range sums {
		ids = append(ids, c)
	}
	slices.SortFunc(ids, func(a, b int32) int {
		if d := cmp.Compare(sums[b].n, sums[a].n); d != 0 {
			return d
		}
		return cmp.Compare(a, b)
	})
	ids = ids[:min(len(ids), o.Communities)]
	slot := map[int32]int{}
	comms := make([]mapCommunity, len(ids))
	for i, c := range ids {
		a := sums[c]
		slot[c] = i
		comms[i] = mapCommunity{ID: c, X: float32(a.sx/float64(a.n) - ox), Y: float32(a.sy/float64(a.n) - oy), Size: a.n}
		for _, r := range ix.communityTop[c] {
			comms[i].Top = append(comms[i].Top, ix.names[r])
		}
	}
	k := len(ids)
	slotOf := make([]int16, ix.n) // -1: not among the shown communities
	for r := range ix.n {
		slotOf[r] = -1
		if s, ok := slot[ix.community[r]]; ok && ix.community[r] >= 0 {
			slotOf[r] = int16(s)
		}
	}
	counts := make([]int64, k*k)
	for s := range ix.n {
		a := slotOf[s]
		if a < 0 {
			continue
		}
		for _, t := range ix.outTo[ix.outOff[s]:ix.outOff[s+1]] {
			if t&linkNofollow != 0 {
				continue
			}
			if b := slotOf[t&linkRow]; b >= 0 && b != a {
				lo, hi := min(a, b), max(a, b)
				counts[int(lo)*k+int(hi)]++
			}
		}
	}
	var bundles [][3]float64
	for i := range k {
		for j := i + 1; j < k; j++ {
			if c := counts[i*k+j]; c > 0 {
				bundles = append(bundles, [3]float64{float64(i), float64(j), float64(c)})
			}
		}
	}
	slices.SortFunc(bundles, func(a, b [3]float64) int { return cmp.Compare(b[2], a[2]) })
	bundles = bundles[:min(len(bundles), o.Bundles)]
	if bundles == nil {
		bundles = [][3]float64{}
	}
	return comms, bundles
}

func hexColor(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }
