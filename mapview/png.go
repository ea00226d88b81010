package mapview

import (
	"cmp"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/fogleman/gg"
	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/font/gofont/goregular"
	"golang.org/x/image/font/opentype"
)

// Picture size limits: a smaller picture has no room for a legend, a larger
// one would need gigabytes (4 bytes a pixel, held whole while drawing).
const (
	MinSide   = 300
	MaxSide   = 16384
	maxPixels = 100_000_000
)

// PNGOptions shape the picture.
type PNGOptions struct {
	Width, Height int     // pixels
	Color         ColorBy // "" means community
	Labels        int     // how many of the top domains to try to label
	// Links are drawn under the points when set (LoadLinks): faint lines
	// for the links among the best-ranked domains, and bands between the
	// communities with the most links between them.
	Links *Links
}

// Picture colours: a light background and dark ink, as on a printed map.
var (
	background = color.RGBA{0xfb, 0xfb, 0xf8, 0xff}
	ink        = color.RGBA{0x22, 0x22, 0x22, 0xff}
	subtleInk  = color.RGBA{0x55, 0x55, 0x55, 0xff}
	linkGrey   = color.RGBA{0x70, 0x70, 0x78, 0xff}
)

// CheckSize says whether a picture of w×h pixels can be drawn.
func CheckSize(w, h int) error {
	if w < MinSide || h < MinSide || w > MaxSide || h > MaxSide {
		return fmt.Errorf("picture size %d×%d: each side must be %d to %d pixels", w, h, MinSide, MaxSide)
	}
	if w*h > maxPixels {
		return fmt.Errorf("picture size %d×%d: at most %d million pixels", w, h, maxPixels/1_000_000)
	}
	return nil
}

// WritePNG draws the map as a PNG picture: one point per placed domain,
// sized by rank and coloured by o.Color, the links of o.Links under them,
// labels for the top domains where they fit without overlapping, a legend
// and the snapshot's date. The same map and options give the same bytes.
//
// Small points (all but the best-ranked few thousand) are not drawn one by
// one over each other but summed into each pixel, as a density: a
// pixel's colour is the mean colour of the points covering it, and its
// opacity grows with how many do, scaled to the map's density, so that a
// million points read as regions of colour whose darkness shows where
// domains crowd, while the few points of a small map stay crisp. Lines
// are summed the same way, fainter. Everything is antialiased: points by
// the share of a pixel their disk covers, lines by Wu's algorithm, the
// big points and the text by gg's rasteriser.
func WritePNG(w io.Writer, m *Map, o PNGOptions) error {
	if err := CheckSize(o.Width, o.Height); err != nil {
		return err
	}
	if len(m.Points) == 0 {
		return ErrNoPlacedDomains
	}
	if o.Color == "" {
		o.Color = ColorCommunity
	}
	p := newPainter(m, o)
	p.points()
	p.labels()
	p.drawLegendAndCaption()
	if err := p.dc.EncodePNG(w); err != nil {
		return fmt.Errorf("encoding the picture: %w", err)
	}
	return nil
}

// painter holds one picture being drawn.
type painter struct {
	m      *Map
	o      PNGOptions
	img    *image.RGBA
	dc     *gg.Context
	col    coloring
	s      float64 // scale of every size: 1 at 1000 pixels for the short side
	base   float64 // the smallest points' radius, from the map's density
	proj   projection
	lab    labeler
	legend rect
	faces  map[float64]font.Face
}

func newPainter(m *Map, o PNGOptions) *painter {
	if o.Color == "" {
		o.Color = ColorCommunity
	}
	img := image.NewRGBA(image.Rect(0, 0, o.Width, o.Height))
	p := &painter{m: m, o: o, img: img, dc: gg.NewContextForRGBA(img), col: m.colors(o.Color), faces: map[float64]font.Face{}}
	p.s = min(max(float64(min(o.Width, o.Height))/1000, 0.5), 4)
	p.dc.SetColor(background)
	p.dc.Clear()
	p.lab.frame = rect{0, 0, float64(o.Width), float64(o.Height)}
	pad := 24 * p.s
	frame := rect{pad, pad, float64(o.Width) - pad, float64(o.Height) - pad}
	p.proj = fit(m.coreBounds(), frame)
	// Points of a crowded map are smaller: about one point's width apart
	// on average over the frame, between 0.55 and 1.2 pixels (at scale 1).
	density := float64(len(m.Points)) / ((frame.x1 - frame.x0) * (frame.y1 - frame.y0))
	p.base = min(max(0.5/math.Sqrt(density)/p.s, 0.55), 1.2)
	// The legend and caption are drawn last, on top, but laid out first
	// so that no label hides under them.
	p.layoutLegendAndCaption()
	return p
}

// radius is a point's size in pixels.
func (p *painter) radius(rank int64) float64 {
	return p.s * (p.base + 8*p.m.sizeWeight(rank))
}

// bigRadius: points at least this big (the best-ranked) are drawn one by
// one, with a rim, over the summed small ones.
func (p *painter) bigRadius() float64 { return 2.5 * p.s }

// color is point i's colour.
func (p *painter) color(i int) color.RGBA { return p.col.Legend[p.col.Index[i]].Color }

// points draws the links, the bands between communities and every point:
// the small ones summed as a density, then the big ones on top, lowest
// rank first so that the top sits on top.
func (p *painter) points() {
	p.density()
	p.bundles()
	dc := p.dc
	big := p.bigRadius()
	for i := len(p.m.Points) - 1; i >= 0; i-- {
		pt := &p.m.Points[i]
		r := p.radius(pt.Rank)
		if r < big {
			continue
		}
		x, y := p.proj.apply(pt.X, pt.Y)
		c := p.color(i)
		dc.SetRGBA255(int(c.R), int(c.G), int(c.B), 225)
		dc.DrawCircle(x, y, r)
		dc.Fill()
		dc.SetRGBA255(255, 255, 255, 200) // a rim keeps big neighbours apart
		dc.SetLineWidth(0.8 * p.s)
		dc.DrawCircle(x, y, r)
		dc.Stroke()
	}
}

// bandRows is how many rows of the picture the density is summed over at
// once: its buffers take 32 bytes a pixel of a band, not of the picture.
const bandRows = 256

// splat is a small point in pixels: centre, radius, colour.
type splat struct {
	x, y, r float32
	c       color.RGBA
}

// segment is a link in pixels, and its colour.
type segment struct {
	x0, y0, x1, y1 float32
	c              color.RGBA
}

// density draws the links and the small points, summed per pixel (see
// WritePNG), one band of rows at a time.
func (p *painter) density() {
	w, h := p.o.Width, p.o.Height
	big := p.bigRadius()
	var splats []splat
	for i := len(p.m.Points) - 1; i >= 0; i-- {
		pt := &p.m.Points[i]
		r := p.radius(pt.Rank)
		if r >= big {
			continue
		}
		x, y := p.proj.apply(pt.X, pt.Y)
		if x < -r || y < -r || x > float64(w)+r || y > float64(h)+r {
			continue
		}
		splats = append(splats, splat{float32(x), float32(y), float32(r), p.color(i)})
	}
	segs := p.segments()
	pointScale, linkScale := p.opacityScales(splats, segs)

	// Each band's splats and segments, by counting sort on the bands
	// they touch.
	bands := (h + bandRows - 1) / bandRows
	spans := func(y0, y1 float32) (int, int) {
		a := max(0, int(math.Floor(float64(y0)))/bandRows)
		b := min(bands-1, max(0, int(math.Ceil(float64(y1))))/bandRows)
		return a, b
	}
	splatBand := bucket(bands, len(splats), func(k int) (int, int) {
		s := splats[k]
		return spans(s.y-s.r-1, s.y+s.r+1)
	})
	segBand := bucket(bands, len(segs), func(k int) (int, int) {
		s := segs[k]
		return spans(min(s.y0, s.y1)-1, max(s.y0, s.y1)+1)
	})

	// Bands apart on GOMAXPROCS goroutines: each sums its own items in
	// their order and writes only its own rows, so the picture is the
	// same for any number.
	var next atomic.Int32
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), bands) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pts, lnk := newAccumulator(w), newAccumulator(w)
			for {
				b := int(next.Add(1)) - 1
				if b >= bands {
					return
				}
				y0, y1 := b*bandRows, min(h, (b+1)*bandRows)
				pts.reset(y0, y1)
				lnk.reset(y0, y1)
				for _, k := range segBand[b] {
					lnk.line(segs[k])
				}
				for _, k := range splatBand[b] {
					pts.disk(splats[k])
				}
				// Links under the points, at most 40% opaque.
				lnk.composite(p.img, 0.4, linkScale)
				pts.composite(p.img, 1, pointScale)
			}
		}()
	}
	wg.Wait()
}

// bucket lists, for each of n buckets, the items 0..items-1 whose span
// (span(k): first and last bucket) covers it, each list in item order.
func bucket(n, items int, span func(k int) (int, int)) [][]int32 {
	count := make([]int, n+1)
	for k := range items {
		a, b := span(k)
		for i := a; i <= b; i++ {
			count[i+1]++
		}
	}
	for i := range n {
		count[i+1] += count[i]
	}
	all := make([]int32, count[n])
	out := make([][]int32, n)
	for i := range n {
		out[i] = all[count[i]:count[i]:count[i+1]]
	}
	for k := range items {
		a, b := span(k)
		for i := a; i <= b; i++ {
			out[i] = append(out[i], int32(k))
		}
	}
	return out
}

// segments are the links among the best-ranked domains that the picture
// draws, coloured by their community when both ends share one (and it has
// a colour of its own), grey otherwise.
func (p *painter) segments() []segment {
	l := p.o.Links
	if l == nil {
		return nil
	}
	var segs []segment
	for _, pr := range l.Pairs {
		a, b := int(pr[0]), int(pr[1])
		if a >= len(p.m.Points) || b >= len(p.m.Points) {
			continue
		}
		x0, y0 := p.proj.apply(p.m.Points[a].X, p.m.Points[a].Y)
		x1, y1 := p.proj.apply(p.m.Points[b].X, p.m.Points[b].Y)
		c := linkGrey
		if ia, ib := p.col.Index[a], p.col.Index[b]; ia == ib && p.col.Legend[ia].Color != otherColor {
			c = p.col.Legend[ia].Color
		}
		segs = append(segs, segment{float32(x0), float32(y0), float32(x1), float32(y1), c})
	}
	return segs
}

// opacityScales choose how many summed points (and lines) make a pixel
// about two-thirds opaque: from the coverage of the crowded parts of the
// map (the 95th percentile over cells of 8×8 pixels that hold any), so
// that a dense map's cores are not one flat colour, bounded so that a
// lone point stays visible.
func (p *painter) opacityScales(splats []splat, segs []segment) (pointScale, linkScale float64) {
	const cell = 8
	cw, ch := (p.o.Width+cell-1)/cell, (p.o.Height+cell-1)/cell
	cover := make([]float64, cw*ch)
	for _, s := range splats {
		cx, cy := int(s.x)/cell, int(s.y)/cell
		if cx >= 0 && cy >= 0 && cx < cw && cy < ch {
			cover[cy*cw+cx] += math.Pi * float64(s.r*s.r) / (cell * cell)
		}
	}
	var used []float64
	for _, c := range cover {
		if c > 0 {
			used = append(used, c)
		}
	}
	pointScale = 0.45
	if len(used) > 0 {
		slices.Sort(used)
		pointScale = min(max(used[len(used)*95/100]/2.5, 0.45), 3)
	}
	// Lines: their mean coverage over the cells points occupy.
	var length float64
	for _, s := range segs {
		length += math.Hypot(float64(s.x1-s.x0), float64(s.y1-s.y0))
	}
	linkScale = 1
	if len(used) > 0 && length > 0 {
		linkScale = max(length/float64(len(used)*cell*cell), 0.5)
	}
	return pointScale, linkScale
}

// accumulator sums colours and weights per pixel over a band of rows.
type accumulator struct {
	w      int
	y0, y1 int
	sum    []float32 // per pixel: r, g, b (weighted), weight
}

func newAccumulator(w int) *accumulator {
	return &accumulator{w: w, sum: make([]float32, 4*w*bandRows)}
}

func (a *accumulator) reset(y0, y1 int) {
	a.y0, a.y1 = y0, y1
	clear(a.sum)
}

// add adds weight wt of colour c to pixel (x, y), if it is in the band.
func (a *accumulator) add(x, y int, wt float32, c color.RGBA) {
	if x < 0 || x >= a.w || y < a.y0 || y >= a.y1 || wt <= 0 {
		return
	}
	s := a.sum[4*((y-a.y0)*a.w+x):]
	s[0] += wt * float32(c.R)
	s[1] += wt * float32(c.G)
	s[2] += wt * float32(c.B)
	s[3] += wt
}

// disk adds a point: each pixel by the share of it the point's disk
// covers (a disk smaller than a pixel spreads its area over the pixels
// near it).
func (a *accumulator) disk(s splat) {
	r := max(s.r, 0.7)
	area := min(s.r*s.r/(r*r), 1)
	lo, hi := int(math.Floor(float64(s.y-r-0.5))), int(math.Ceil(float64(s.y+r+0.5)))
	lo, hi = max(lo, a.y0), min(hi, a.y1-1)
	left, right := int(math.Floor(float64(s.x-r-0.5))), int(math.Ceil(float64(s.x+r+0.5)))
	for y := lo; y <= hi; y++ {
		dy := float32(y) + 0.5 - s.y
		for x := left; x <= right; x++ {
			dx := float32(x) + 0.5 - s.x
			cov := r + 0.5 - float32(math.Sqrt(float64(dx*dx+dy*dy)))
			a.add(x, y, min(max(cov, 0), 1)*area, s.c)
		}
	}
}

// line adds a segment by Xiaolin Wu's algorithm: along its longer axis,
// the two pixels nearest the line share each step by how near they are.
func (a *accumulator) line(s segment) {
	x0, y0, x1, y1 := s.x0, s.y0, s.x1, s.y1
	steep := abs32(y1-y0) > abs32(x1-x0)
	if steep {
		x0, y0, x1, y1 = y0, x0, y1, x1
	}
	if x0 > x1 {
		x0, x1, y0, y1 = x1, x0, y1, y0
	}
	dx := x1 - x0
	grad := float32(1)
	if dx > 0 {
		grad = (y1 - y0) / dx
	}
	// Only the steps whose pixels can fall in the band.
	start, end := int(math.Round(float64(x0))), int(math.Round(float64(x1)))
	if steep { // the band's rows are the stepping axis
		start, end = max(start, a.y0-1), min(end, a.y1)
	} else if grad != 0 {
		ya, yb := float32(a.y0-1), float32(a.y1+1)
		ta, tb := x0+(ya-y0)/grad, x0+(yb-y0)/grad
		start = max(start, int(math.Floor(float64(min(ta, tb)))))
		end = min(end, int(math.Ceil(float64(max(ta, tb)))))
	} else if int(y0) < a.y0-1 || int(y0) > a.y1 {
		return
	}
	for x := start; x <= end; x++ {
		y := y0 + grad*(float32(x)-x0)
		fy := float32(math.Floor(float64(y)))
		frac := y - fy
		if steep {
			a.add(int(fy), x, 1-frac, s.c)
			a.add(int(fy)+1, x, frac, s.c)
		} else {
			a.add(x, int(fy), 1-frac, s.c)
			a.add(x, int(fy)+1, frac, s.c)
		}
	}
}

// composite lays the band over img: each pixel the mean colour summed
// into it, at opacity most·(1 - exp(-weight/scale)).
func (a *accumulator) composite(img *image.RGBA, most, scale float64) {
	for y := a.y0; y < a.y1; y++ {
		row := a.sum[4*(y-a.y0)*a.w:]
		px := img.Pix[img.PixOffset(0, y):]
		for x := range a.w {
			s := row[4*x : 4*x+4]
			if s[3] <= 0 {
				continue
			}
			alpha := most * (1 - math.Exp(-float64(s[3])/scale))
			inv := 1 / float64(s[3])
			d := px[4*x : 4*x+4]
			for k := range 3 {
				c := float64(s[k]) * inv
				d[k] = uint8(math.Round(alpha*c + (1-alpha)*float64(d[k])))
			}
		}
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// bundleCount is how many bands between communities a picture draws: the
// pairs of coloured communities with the most links between them.
const bundleCount = 16

// bundles draws the links between communities as bands from centre to
// centre, curved, as wide as the square root of their share of the links
// between the communities that have a colour of their own.
func (p *painter) bundles() {
	l := p.o.Links
	if l == nil || len(l.Between) == 0 || p.col.By != ColorCommunity {
		return
	}
	// The coloured communities' centres (the mean of their points).
	type centre struct {
		x, y float64
		n    int
	}
	centres := map[int32]*centre{}
	for i := range p.m.Points {
		pt := &p.m.Points[i]
		if pt.Community < 0 || p.color(i) == otherColor {
			continue
		}
		c := centres[pt.Community]
		if c == nil {
			c = &centre{}
			centres[pt.Community] = c
		}
		c.x += pt.X
		c.y += pt.Y
		c.n++
	}
	type bundle struct {
		a, b int32
		n    int64
	}
	var bs []bundle
	for k, n := range l.Between {
		if centres[k[0]] != nil && centres[k[1]] != nil {
			bs = append(bs, bundle{k[0], k[1], n})
		}
	}
	slices.SortFunc(bs, func(x, y bundle) int {
		if d := cmp.Compare(y.n, x.n); d != 0 {
			return d
		}
		if d := cmp.Compare(x.a, y.a); d != 0 {
			return d
		}
		return cmp.Compare(x.b, y.b)
	})
	bs = bs[:min(len(bs), bundleCount)]
	if len(bs) == 0 {
		return
	}
	dc := p.dc
	top := float64(bs[0].n)
	for i := len(bs) - 1; i >= 0; i-- { // the strongest on top
		b := bs[i]
		ca, cb := centres[b.a], centres[b.b]
		x0, y0 := p.proj.apply(ca.x/float64(ca.n), ca.y/float64(ca.n))
		x1, y1 := p.proj.apply(cb.x/float64(cb.n), cb.y/float64(cb.n))
		// Bend to the left of the way from the smaller id to the larger.
		mx, my := (x0+x1)/2, (y0+y1)/2
		cx, cy := mx-(y1-y0)*0.2, my+(x1-x0)*0.2
		share := math.Sqrt(float64(b.n) / top)
		dc.SetRGBA255(int(linkGrey.R), int(linkGrey.G), int(linkGrey.B), int(25+40*share))
		dc.SetLineWidth(p.s * (1 + 4*share))
		dc.SetLineCapRound()
		dc.MoveTo(x0, y0)
		dc.QuadraticTo(cx, cy, x1, y1)
		dc.Stroke()
	}
}

// labels names the top domains, best first, where a label fits.
func (p *painter) labels() {
	n := min(p.o.Labels, len(p.m.Points))
	if n <= 0 {
		return
	}
	// The labelled points themselves are obstacles: no label covers one.
	for i := range n {
		pt := &p.m.Points[i]
		x, y := p.proj.apply(pt.X, pt.Y)
		r := p.radius(pt.Rank)
		p.lab.block(rect{x - r, y - r, x + r, y + r})
	}
	for i := range n {
		pt := &p.m.Points[i]
		size := p.s * (10 + 5*p.m.sizeWeight(pt.Rank))
		p.dc.SetFontFace(p.face(size))
		tw, th := p.dc.MeasureString(pt.Domain)
		x, y := p.proj.apply(pt.X, pt.Y)
		cands := labelCandidates(x, y, p.radius(pt.Rank), tw, th, 2*p.s)
		k := p.lab.place(cands)
		if k < 0 {
			continue
		}
		c := cands[k]
		p.haloText(pt.Domain, c.x0, c.y1-0.22*th, ink)
	}
}

// haloText draws text with a rim of background colour, legible over points.
func (p *painter) haloText(s string, x, y float64, c color.Color) {
	dc := p.dc
	dc.SetColor(background)
	d := math.Max(1, p.s)
	for _, off := range [][2]float64{{-d, 0}, {d, 0}, {0, -d}, {0, d}, {-d, -d}, {d, d}, {-d, d}, {d, -d}} {
		dc.DrawString(s, x+off[0], y+off[1])
	}
	dc.SetColor(c)
	dc.DrawString(s, x, y)
}

// legendTitles say what the colour shows.
var legendTitles = map[ColorBy]string{
	ColorCommunity: "colour: community, named by its top domains",
	ColorTier:      "colour: revisit tier",
	ColorTLD:       "colour: top-level domain",
	ColorOperator:  "colour: network operator",
}

// legendRows are the legend's lines: the title, one per colour, and what
// the size (and the lines, when drawn) mean.
func (p *painter) legendRows() []string {
	rows := []string{legendTitles[p.col.By]}
	for _, e := range p.col.Legend {
		rows = append(rows, e.Label)
	}
	rows = append(rows, "size: rank (bigger is higher)")
	if l := p.o.Links; l != nil && (len(l.Pairs) > 0 || len(l.Between) > 0) {
		rows = append(rows, fmt.Sprintf("lines: links among the top %s; bands: between communities", shortCount(int64(l.Top))))
	}
	return rows
}

// layoutLegendAndCaption places the legend (top left) and the caption
// (bottom left) and blocks both for labels.
func (p *painter) layoutLegendAndCaption() {
	dc := p.dc
	s := p.s
	pad, line := 10*s, 18*s
	rows := p.legendRows()
	width := 0.0
	for i, r := range rows {
		dc.SetFontFace(p.face(11 * s))
		if i == 0 {
			dc.SetFontFace(p.face(13 * s))
		}
		w, _ := dc.MeasureString(r)
		width = max(width, w)
	}
	p.legend = rect{pad, pad, pad + width + 2*pad + 16*s, pad + float64(len(rows))*line + pad}
	p.lab.block(p.legend)
	p.lab.block(p.captionBox())
}

// caption is the line at the bottom: the snapshot and how much it shows.
func (p *painter) caption() string {
	c := fmt.Sprintf("mapthenet · snapshot %s · as of %s · %d of %d domains placed",
		p.m.Snapshot, p.m.AsOf.UTC().Format("2006-01-02 15:04 UTC"), len(p.m.Points), p.m.Known)
	p.dc.SetFontFace(p.face(11 * p.s))
	if cw, _ := p.dc.MeasureString(c); cw+40*p.s > float64(p.o.Width) { // a narrow picture gets the date alone
		c = "mapthenet · as of " + p.m.AsOf.UTC().Format("2006-01-02")
	}
	return c
}

func (p *painter) captionBox() rect {
	pad := 10 * p.s
	p.dc.SetFontFace(p.face(11 * p.s))
	cw, ch := p.dc.MeasureString(p.caption())
	return rect{pad, float64(p.o.Height) - pad - ch - pad, pad + cw + 2*pad, float64(p.o.Height) - pad}
}

// drawLegendAndCaption draws both, each on a pale box, over the map.
func (p *painter) drawLegendAndCaption() {
	dc := p.dc
	s := p.s
	pad, line := 10*s, 18*s
	rows := p.legendRows()
	box := p.legend
	p.panel(box)
	y := box.y0 + pad + line*0.7
	dc.SetFontFace(p.face(13 * s))
	dc.SetColor(ink)
	dc.DrawString(rows[0], box.x0+pad, y)
	dc.SetFontFace(p.face(11 * s))
	for _, e := range p.col.Legend {
		y += line
		dc.SetColor(e.Color)
		dc.DrawCircle(box.x0+pad+5*s, y-4*s, 5*s)
		dc.Fill()
		dc.SetColor(ink)
		dc.DrawString(e.Label, box.x0+pad+16*s, y)
	}
	dc.SetColor(subtleInk)
	for _, r := range rows[1+len(p.col.Legend):] {
		y += line
		dc.DrawString(r, box.x0+pad, y)
	}

	cb := p.captionBox()
	p.panel(cb)
	dc.SetFontFace(p.face(11 * s))
	_, ch := dc.MeasureString(p.caption())
	dc.SetColor(ink)
	dc.DrawString(p.caption(), cb.x0+pad, cb.y1-pad-0.22*ch)
}

// panel is a pale rounded box under legend text.
func (p *painter) panel(r rect) {
	dc := p.dc
	dc.SetRGBA255(255, 255, 255, 225)
	dc.DrawRoundedRectangle(r.x0, r.y0, r.x1-r.x0, r.y1-r.y0, 6*p.s)
	dc.Fill()
	dc.SetRGBA255(0, 0, 0, 40)
	dc.SetLineWidth(p.s)
	dc.DrawRoundedRectangle(r.x0, r.y0, r.x1-r.x0, r.y1-r.y0, 6*p.s)
	dc.Stroke()
}

// coreBounds are the map's bounds without its farthest stragglers: past
// 10,000 points, the 0.1% beyond either end of each axis are left out
// (drawn if they fall in the frame), so that a few far-flung domains do
// not shrink the rest to a dot. The quantiles are taken over a fixed
// sample of at most about 50,000 points (every k-th), which a million
// points sort in milliseconds rather than a quarter of a second.
func (m *Map) coreBounds() bounds {
	n := len(m.Points)
	if n < 10_000 {
		return m.bounds()
	}
	step := max(1, n/50_000)
	var xs, ys []float64
	for i := 0; i < n; i += step {
		xs, ys = append(xs, m.Points[i].X), append(ys, m.Points[i].Y)
	}
	slices.Sort(xs)
	slices.Sort(ys)
	k := len(xs) / 1000
	return bounds{xs[k], ys[k], xs[len(xs)-1-k], ys[len(ys)-1-k]}
}

// projection maps map coordinates to pixels: one scale on both axes (the
// layout's distances mean something), y up as on a chart.
type projection struct{ scale, ox, oy, cx, cy float64 }

// fit centres the bounds in the frame at the largest scale that fits.
func fit(b bounds, frame rect) projection {
	w, h := b.maxX-b.minX, b.maxY-b.minY
	fw, fh := frame.x1-frame.x0, frame.y1-frame.y0
	scale := 1.0
	switch {
	case w > 0 && h > 0:
		scale = min(fw/w, fh/h)
	case w > 0:
		scale = fw / w
	case h > 0:
		scale = fh / h
	}
	return projection{
		scale: scale,
		ox:    (b.minX + b.maxX) / 2, oy: (b.minY + b.maxY) / 2,
		cx: (frame.x0 + frame.x1) / 2, cy: (frame.y0 + frame.y1) / 2,
	}
}

func (pr projection) apply(x, y float64) (float64, float64) {
	return pr.cx + (x-pr.ox)*pr.scale, pr.cy - (y-pr.oy)*pr.scale
}

// goFont is the Go font, parsed once.
var goFont = sync.OnceValues(func() (*opentype.Font, error) { return opentype.Parse(goregular.TTF) })

// face returns the Go Regular face at size points (72 dpi: points are
// pixels), cached per picture: a face holds a glyph cache and is not safe
// for concurrent use. The font is compiled in, so it fails only in a
// damaged binary; then the text is drawn in a small bitmap font rather
// than not at all.
func (p *painter) face(size float64) font.Face {
	size = math.Round(size*4) / 4
	if f, ok := p.faces[size]; ok {
		return f
	}
	var f font.Face = basicfont.Face7x13
	if fnt, err := goFont(); err == nil {
		if of, err := opentype.NewFace(fnt, &opentype.FaceOptions{Size: size, DPI: 72, Hinting: font.HintingFull}); err == nil {
			f = of
		}
	}
	p.faces[size] = f
	return f
}
