package mapview

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"sync"

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
	Color         ColorBy // "" means tier
	Labels        int     // how many of the top domains to try to label
}

// Picture colours: a light background and dark ink, as on a printed map.
var (
	background = color.RGBA{0xfb, 0xfb, 0xf8, 0xff}
	ink        = color.RGBA{0x22, 0x22, 0x22, 0xff}
	subtleInk  = color.RGBA{0x55, 0x55, 0x55, 0xff}
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
// sized by rank and coloured by o.Color, labels for the top domains where
// they fit without overlapping, a legend and the snapshot's date. The same
// map and options give the same bytes.
func WritePNG(w io.Writer, m *Map, o PNGOptions) error {
	if err := CheckSize(o.Width, o.Height); err != nil {
		return err
	}
	if len(m.Points) == 0 {
		return ErrNoPlacedDomains
	}
	p := newPainter(m, o)
	p.points()
	p.labels()
	if err := p.dc.EncodePNG(w); err != nil {
		return fmt.Errorf("encoding the picture: %w", err)
	}
	return nil
}

// painter holds one picture being drawn.
type painter struct {
	m      *Map
	o      PNGOptions
	dc     *gg.Context
	col    coloring
	s      float64 // scale of every size: 1 at 1000 pixels for the short side
	proj   projection
	lab    labeler
	legend rect
	faces  map[float64]font.Face
}

func newPainter(m *Map, o PNGOptions) *painter {
	p := &painter{m: m, o: o, dc: gg.NewContext(o.Width, o.Height), col: m.colors(o.Color), faces: map[float64]font.Face{}}
	p.s = min(max(float64(min(o.Width, o.Height))/1000, 0.5), 4)
	p.dc.SetColor(background)
	p.dc.Clear()
	p.lab.frame = rect{0, 0, float64(o.Width), float64(o.Height)}
	pad := 24 * p.s
	p.proj = fit(m.bounds(), rect{pad, pad, float64(o.Width) - pad, float64(o.Height) - pad})
	// The legend and caption are drawn last, on top, but reserved first so
	// that no label hides under them.
	p.legendAndCaption()
	return p
}

// radius is a point's size in pixels.
func (p *painter) radius(rank int64) float64 {
	return p.s * (1.2 + 8*p.m.sizeWeight(rank))
}

// points draws every point, lowest rank first so that the top sits on top.
// Points are a little transparent so that dense areas read as dense.
func (p *painter) points() {
	dc := p.dc
	for i := len(p.m.Points) - 1; i >= 0; i-- {
		pt := &p.m.Points[i]
		x, y := p.proj.apply(pt.X, pt.Y)
		r := p.radius(pt.Rank)
		c := p.col.Legend[p.col.Index[i]].Color
		dc.SetRGBA255(int(c.R), int(c.G), int(c.B), 210)
		dc.DrawCircle(x, y, r)
		dc.Fill()
		if r > 3*p.s { // a rim keeps big neighbours apart
			dc.SetRGBA255(255, 255, 255, 200)
			dc.SetLineWidth(0.8 * p.s)
			dc.DrawCircle(x, y, r)
			dc.Stroke()
		}
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

// legendAndCaption draws the legend (top left) and the caption with the
// snapshot's date (bottom left), each on a pale box, and blocks both for
// labels.
func (p *painter) legendAndCaption() {
	dc := p.dc
	s := p.s
	pad, line := 10*s, 18*s
	titleFace, textFace := p.face(13*s), p.face(11*s)

	title := map[ColorBy]string{ColorTier: "colour: revisit tier", ColorTLD: "colour: top-level domain", ColorOperator: "colour: network operator"}[p.col.By]
	rows := []string{title}
	for _, e := range p.col.Legend {
		rows = append(rows, e.Label)
	}
	rows = append(rows, "size: rank (bigger is higher)")
	width := 0.0
	for i, r := range rows {
		dc.SetFontFace(textFace)
		if i == 0 {
			dc.SetFontFace(titleFace)
		}
		w, _ := dc.MeasureString(r)
		width = max(width, w)
	}
	box := rect{pad, pad, pad + width + 2*pad + 16*s, pad + float64(len(rows))*line + pad}
	p.panel(box)
	y := box.y0 + pad + line*0.7
	dc.SetFontFace(titleFace)
	dc.SetColor(ink)
	dc.DrawString(rows[0], box.x0+pad, y)
	dc.SetFontFace(textFace)
	for _, e := range p.col.Legend {
		y += line
		dc.SetColor(e.Color)
		dc.DrawCircle(box.x0+pad+5*s, y-4*s, 5*s)
		dc.Fill()
		dc.SetColor(ink)
		dc.DrawString(e.Label, box.x0+pad+16*s, y)
	}
	y += line
	dc.SetColor(subtleInk)
	dc.DrawString(rows[len(rows)-1], box.x0+pad, y)
	p.legend = box
	p.lab.block(box)

	caption := fmt.Sprintf("mapthenet · snapshot %s · as of %s · %d of %d domains placed",
		p.m.Snapshot, p.m.AsOf.UTC().Format("2006-01-02 15:04 UTC"), len(p.m.Points), p.m.Known)
	dc.SetFontFace(textFace)
	cw, ch := dc.MeasureString(caption)
	if cw+4*pad > float64(p.o.Width) { // a narrow picture gets the date alone
		caption = "mapthenet · as of " + p.m.AsOf.UTC().Format("2006-01-02")
		cw, ch = dc.MeasureString(caption)
	}
	cb := rect{pad, float64(p.o.Height) - pad - ch - pad, pad + cw + 2*pad, float64(p.o.Height) - pad}
	p.panel(cb)
	dc.SetColor(ink)
	dc.DrawString(caption, cb.x0+pad, cb.y1-pad-0.22*ch)
	p.lab.block(cb)
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
