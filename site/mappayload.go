package site

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"golang.org/x/sync/errgroup"

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

// mapPayload is what the browser map loads, each part made and compressed
// once when the snapshot is loaded: meta (JSON: legends, communities,
// bundles, the layout of the binary parts), points (what the first frame
// needs: positions to 16 bits, sizes and the default colouring), details
// (what comes after it: exact positions, ranks, the other colourings) and
// names (one name a line). The binary parts are typed arrays the page
// hands to WebGL as they are, so they come in draw order: the map order
// reversed, the best-ranked point last (drawn on top); names.txt is in
// map order.
type mapPayload struct {
	meta, points, details, names blob
	placed                       int
}

// blob is a response body as sent: gzip-compressed where that saves a
// tenth or more (quantised positions do not compress; decompressing them
// would only cost the browser time).
type blob struct {
	body    []byte
	gzipped bool
	size    int // raw
}

func makeBlob(raw []byte) (blob, error) {
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
	if b.Len() > len(raw)*9/10 {
		return blob{body: raw, size: len(raw)}, nil
	}
	return blob{body: slices.Clip(b.Bytes()), gzipped: true, size: len(raw)}, nil
}

// mapMeta is meta.json (DESIGN.md, "serve": the JSON API).
type mapMeta struct {
	Snapshot       string                  `json:"snapshot"`
	AsOf           time.Time               `json:"as_of"`
	Known          int                     `json:"known"`
	Placed         int                     `json:"placed"`
	MaxRank        int32                   `json:"max_rank"`
	Bounds         [4]float32              `json:"bounds"` // min x, min y, max x, max y of the points
	Colorings      []mapColoring           `json:"colorings"`
	Sections       map[string]section      `json:"sections"`        // parts of points.bin
	Bytes          int                     `json:"bytes"`           // points.bin's length
	SizeRuns       [][2]int                `json:"size_runs"`       // [weight, points], in draw order
	DetailSections map[string]section      `json:"detail_sections"` // parts of details.bin
	DetailBytes    int                     `json:"detail_bytes"`
	Communities    []mapCommunity          `json:"communities"`
	Bundles        [][3]float64            `json:"bundles"` // [community a, community b (indexes into communities), links]
	Tiers          map[string]tierInfoJSON `json:"tiers"`
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

// section is a typed array inside points.bin or details.bin: its byte
// offset, element type and length.
type section struct {
	Offset int    `json:"offset"`
	Type   string `json:"type"` // float32, uint32, uint16, uint8
	Length int    `json:"length"`
}

// sections lays out typed arrays one after the other, each at an offset
// its element size divides.
type sections struct {
	at   map[string]section
	size map[string]int
	buf  []byte
}

func newSections() *sections { return &sections{at: map[string]section{}, size: map[string]int{}} }

func (s *sections) add(name, typ string, size, length int) {
	end := 0
	for k, sec := range s.at {
		end = max(end, sec.Offset+s.size[k]*sec.Length)
	}
	end = (end + size - 1) / size * size
	s.at[name], s.size[name] = section{end, typ, length}, size
}

// bytes is section name's memory, once every section is added.
func (s *sections) bytes(name string) []byte {
	if s.buf == nil {
		end := 0
		for k, sec := range s.at {
			end = max(end, sec.Offset+s.size[k]*sec.Length)
		}
		s.buf = large[byte](end)
	}
	sec := s.at[name]
	return s.buf[sec.Offset : sec.Offset+s.size[name]*sec.Length]
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

// sizeWeight is how big a point of rank r is drawn, 0 (last or unranked)
// to 255 (rank 1), log-scaled: the page's point sizes and label sizes.
func sizeWeight(r, maxRank int32) uint8 {
	if r < 1 || maxRank <= 1 {
		if r == 1 {
			return 255
		}
		return 0
	}
	w := 1 - math.Log(float64(r))/math.Log(float64(maxRank)+1)
	return uint8(math.Round(255 * w * w))
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
	meta := mapMeta{Snapshot: ix.ID, AsOf: ix.AsOf.UTC(), Known: ix.n, Placed: n, Communities: []mapCommunity{},
		Bundles: [][3]float64{}, Tiers: map[string]tierInfoJSON{}}
	for _, t := range ix.Tiers {
		meta.Tiers[fmt.Sprint(t.Number)] = tierInfoJSON{t.MaxRank, t.RevisitDays}
	}
	// Positions are sent relative to the middle of the points, as float32:
	// world coordinates of any size keep their precision near the points.
	minX, minY, maxX, maxY := math.Inf(1), math.Inf(1), math.Inf(-1), math.Inf(-1)
	for _, r := range rows {
		minX, maxX = min(minX, xs[r]), max(maxX, xs[r])
		minY, maxY = min(minY, ys[r]), max(maxY, ys[r])
		meta.MaxRank = max(meta.MaxRank, ix.rank[r])
	}
	ox, oy := (minX+maxX)/2, (minY+maxY)/2
	if n == 0 {
		ox, oy, minX, minY, maxX, maxY = 0, 0, 0, 0, 0, 0
	}
	meta.Bounds = [4]float32{float32(minX - ox), float32(minY - oy), float32(maxX - ox), float32(maxY - oy)}
	b := meta.Bounds
	// quantise maps a position to 16 bits over the bounds, as the page
	// maps them back: bounds[0] + q/65535 × (bounds[2] - bounds[0]).
	quantise := func(v float64, lo, hi float32) uint16 {
		if hi <= lo {
			return 0
		}
		return uint16(min(max(math.Round((v-float64(lo))/float64(hi-lo)*65535), 0), 65535))
	}

	// The colourings, through mapview's (one way of colouring a map), at
	// once.
	vm := &mapview.Map{Snapshot: ix.ID, AsOf: ix.AsOf, Tiers: ix.Tiers, Known: int64(ix.n), Points: large[mapview.Point](n)}
	for i, r := range rows {
		vm.Points[i] = mapview.Point{Domain: ix.name(r), Rank: int64(ix.rank[r]), Tier: int32(ix.tier[r]),
			Operator: ix.strs[ix.operator[r]], Community: ix.community[r]}
	}
	type colored struct {
		by     mapview.ColorBy
		legend []mapview.LegendEntry
		index  []uint8
	}
	colors := make([]colored, len(colorings))
	var wg sync.WaitGroup
	for k, by := range colorings {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &colors[k]
			c.by, c.legend, c.index = vm.Coloring(by)
		}()
	}
	wg.Wait()
	vm = nil
	// The default colouring comes with the first frame, the others after
	// it.
	points, details := newSections(), newSections()
	points.add("xy16", "uint16", 2, 2*n)
	details.add("xy", "float32", 4, 2*n)
	details.add("rank", "uint32", 4, n)
	for k, c := range colors {
		part := details
		if k == 0 {
			part = points
		}
		part.add("color_"+string(c.by), "uint8", 1, n)
	}
	xy16, xy, rank := points.bytes("xy16"), details.bytes("xy"), details.bytes("rank")
	// Sizes follow the ranks, so they are runs: in meta.json, not a
	// megabyte of points.bin.
	meta.SizeRuns = [][2]int{}
	for k := n - 1; k >= 0; k-- { // draw order
		w := int(sizeWeight(ix.rank[rows[k]], meta.MaxRank))
		if last := len(meta.SizeRuns) - 1; last >= 0 && meta.SizeRuns[last][0] == w {
			meta.SizeRuns[last][1]++
		} else {
			meta.SizeRuns = append(meta.SizeRuns, [2]int{w, 1})
		}
	}
	for k, r := range rows {
		d := n - 1 - k // draw order
		binary.LittleEndian.PutUint16(xy16[4*d:], quantise(xs[r]-ox, b[0], b[2]))
		binary.LittleEndian.PutUint16(xy16[4*d+2:], quantise(ys[r]-oy, b[1], b[3]))
	}
	for k, r := range rows {
		d := n - 1 - k
		binary.LittleEndian.PutUint32(xy[8*d:], math.Float32bits(float32(xs[r]-ox)))
		binary.LittleEndian.PutUint32(xy[8*d+4:], math.Float32bits(float32(ys[r]-oy)))
		binary.LittleEndian.PutUint32(rank[4*d:], uint32(ix.rank[r]))
	}
	for k, c := range colors {
		mc := mapColoring{By: c.by}
		for _, e := range c.legend {
			mc.Legend = append(mc.Legend, legendEntry{e.Label, hexColor(e.Color)})
		}
		meta.Colorings = append(meta.Colorings, mc)
		part := details
		if k == 0 {
			part = points
		}
		dst := part.bytes("color_" + string(c.by))
		for i, v := range c.index {
			dst[n-1-i] = v
		}
	}
	meta.Sections, meta.Bytes = points.at, len(points.buf)
	meta.DetailSections, meta.DetailBytes = details.at, len(details.buf)
	meta.Communities, meta.Bundles = ix.communityMap(rows, xs, ys, ox, oy, o)

	names := make([]byte, 0, len(ix.nameData)+n)
	for _, r := range rows {
		names = append(append(names, ix.name(r)...), '\n')
	}
	rawMeta, err := json.Marshal(meta)
	if err != nil {
		return nil, err
	}
	p := &mapPayload{placed: n}
	var g errgroup.Group
	for _, part := range []struct {
		dst *blob
		raw []byte
	}{{&p.meta, rawMeta}, {&p.points, points.buf}, {&p.details, details.buf}, {&p.names, names}} {
		g.Go(func() (err error) {
			*part.dst, err = makeBlob(part.raw)
			return err
		})
	}
	if err := g.Wait(); err != nil {
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
			comms[i].Top = append(comms[i].Top, ix.name(r))
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
