package mapview

import (
	"bytes"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
)

// pictures names a directory to write sample pictures to, to look at.
var pictures = flag.String("pictures", "", "write sample pictures (3,000 and 1,000,000 domains) to `DIR`")

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clusteredMap is a map of n domains in k communities, each a cluster of
// its own (as the layout draws them), best rank first, and their links:
// each domain links to three others, nine in ten of its own community.
// The same arguments give the same map.
func clusteredMap(n, k int, seed uint64) (*Map, *Links) {
	rng := rand.New(rand.NewPCG(seed, 7))
	m := &Map{Snapshot: fixtureAsOf.Format(data.SnapshotIDLayout), AsOf: fixtureAsOf, Tiers: schedule.DefaultTiers,
		Known: int64(n), Points: make([]Point, n), MaxRank: int64(n)}
	cx, cy := make([]float64, k), make([]float64, k)
	for c := range k {
		a := 2 * math.Pi * float64(c) / float64(k)
		cx[c], cy[c] = 60*math.Cos(a)+rng.NormFloat64()*10, 60*math.Sin(a)+rng.NormFloat64()*10
	}
	members := make([][]int32, k)
	for i := range m.Points {
		c := int32(rng.IntN(k))
		if i%50 == 49 {
			c = -1 // no community
		}
		p := &m.Points[i]
		p.Domain = "site" + strconv.Itoa(i) + ".example"
		p.Rank = int64(i + 1)
		p.Tier = int32(schedule.DefaultTiers.For(p.Rank).Number)
		p.Community = c
		at := max(c, 0)
		p.X, p.Y = cx[at]+rng.NormFloat64()*12, cy[at]+rng.NormFloat64()*12
		if c >= 0 {
			members[c] = append(members[c], int32(i))
		}
	}
	l := NewLinks(m, DefaultLinkTop)
	for i := range m.Points {
		c := m.Points[i].Community
		for range 3 {
			var j int32
			if c >= 0 && rng.IntN(10) != 0 {
				j = members[c][rng.IntN(len(members[c]))]
			} else {
				j = int32(rng.IntN(n))
			}
			l.Add(m, int32(i), j)
		}
	}
	return m, l
}

func render(t testing.TB, m *Map, o PNGOptions) *image.RGBA {
	t.Helper()
	var buf bytes.Buffer
	if err := WritePNG(&buf, m, o); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	rgba, ok := img.(*image.RGBA)
	if !ok {
		rgba = image.NewRGBA(img.Bounds())
		for y := img.Bounds().Min.Y; y < img.Bounds().Max.Y; y++ {
			for x := img.Bounds().Min.X; x < img.Bounds().Max.X; x++ {
				rgba.Set(x, y, img.At(x, y))
			}
		}
	}
	return rgba
}

// nearColor says whether a pixel is within d of colour c on every channel.
func nearColor(img *image.RGBA, x, y int, c color.RGBA, d int) bool {
	px := img.Pix[img.PixOffset(x, y):]
	for k, v := range []uint8{c.R, c.G, c.B} {
		if diff := int(px[k]) - int(v); diff > d || diff < -d {
			return false
		}
	}
	return true
}

// TestPictureOfCommunities: the default picture of 3,000 domains in eight
// communities colours by community, with each of the eight colours on
// hundreds of pixels, a legend in the top left corner that names the
// biggest community by its top domains (text pixels on the pale panel),
// and faint links: drawn with links, the picture has far more pixels
// that are neither background nor a community's full colour.
func TestPictureOfCommunities(t *testing.T) {
	m, links := clusteredMap(3000, 8, 1)
	o := PNGOptions{Width: 800, Height: 600, Labels: 20}
	plain := render(t, m, o)
	o.Links = links
	img := render(t, m, o)

	col := m.colors(ColorCommunity)
	if want := "site"; len(col.Legend) != 9 || col.Legend[0].Label[:len(want)] != want {
		t.Fatalf("legend %+v: want 8 communities named by their top domains and the others", col.Legend)
	}
	if n := inkPixels(img); n < 800*600/20 {
		t.Errorf("only %d pixels differ from the background", n)
	}
	for _, e := range col.Legend[:8] {
		count := 0
		for y := range 600 {
			for x := range 800 {
				if nearColor(img, x, y, e.Color, 40) {
					count++
				}
			}
		}
		if count < 150 {
			t.Errorf("community %q: %d pixels of its colour, want hundreds", e.Label, count)
		}
	}
	// The legend: a pale panel with dark text, top left.
	dark, pale := 0, 0
	for y := 10; y < 60; y++ {
		for x := 10; x < 200; x++ {
			switch {
			case nearColor(img, x, y, ink, 60):
				dark++
			case nearColor(img, x, y, color.RGBA{255, 255, 255, 255}, 8):
				pale++
			}
		}
	}
	if dark < 100 || pale < 3000 {
		t.Errorf("legend corner: %d dark and %d pale pixels, want text on a panel", dark, pale)
	}
	// Links: pixels changed by drawing them.
	changed := 0
	for i := 0; i < len(img.Pix); i += 4 {
		if !bytes.Equal(img.Pix[i:i+3], plain.Pix[i:i+3]) {
			changed++
		}
	}
	if changed < 800*600/20 {
		t.Errorf("links changed %d pixels, want a faint web over much of the map", changed)
	}
}

// TestPictureDensity: 40,000 points on a small picture are summed as a
// density rather than painted over each other: the crowded middle of a
// community is darker than its fringe, and little of the map is one flat
// colour at full strength.
func TestPictureDensity(t *testing.T) {
	m, _ := clusteredMap(40_000, 4, 2)
	img := render(t, m, PNGOptions{Width: 400, Height: 300, Color: ColorCommunity})
	// Opacity of each pixel: how far it is from the background.
	var strength []float64
	for y := range 300 {
		for x := range 400 {
			px := img.Pix[img.PixOffset(x, y):]
			d := math.Abs(float64(px[0])-float64(background.R)) + math.Abs(float64(px[1])-float64(background.G)) + math.Abs(float64(px[2])-float64(background.B))
			if d > 6 {
				strength = append(strength, d)
			}
		}
	}
	slices.Sort(strength)
	lo, hi := strength[len(strength)/10], strength[len(strength)*9/10]
	t.Logf("%d inked pixels; opacity 10th percentile %.0f, 90th %.0f", len(strength), lo, hi)
	if len(strength) < 400*300/10 || hi < 2*lo {
		t.Errorf("opacity 10th percentile %.0f, 90th %.0f over %d pixels: want crowded parts clearly darker", lo, hi, len(strength))
	}
}

// BenchmarkWritePNG1M draws a million domains in twelve communities with
// the links among the top 20,000, at the map command's default size:
//
//	go test ./mapview -run '^$' -bench WritePNG1M -benchtime 3x
func BenchmarkWritePNG1M(b *testing.B) {
	m, links := clusteredMap(1_000_000, 12, 3)
	b.ResetTimer()
	for b.Loop() {
		start, cpu := time.Now(), processCPU()
		if err := WritePNG(io.Discard, m, PNGOptions{Width: 1600, Height: 1200, Labels: 40, Links: links}); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(time.Since(start).Seconds(), "s/picture")
		b.ReportMetric((processCPU() - cpu).Seconds(), "cpu-s/picture")
	}
}

// TestWriteSamplePictures writes pictures to look at, to the directory
// given by -pictures (none by default).
func TestWriteSamplePictures(t *testing.T) {
	if *pictures == "" {
		t.Skip("no -pictures DIR given: nothing to write")
	}
	for _, n := range []int{3000, 1_000_000} {
		m, links := clusteredMap(n, 12, 4)
		var buf bytes.Buffer
		if err := WritePNG(&buf, m, PNGOptions{Width: 1600, Height: 1200, Labels: 40, Links: links}); err != nil {
			t.Fatal(err)
		}
		if err := WriteFile(filepath.Join(*pictures, fmt.Sprintf("clustered-%d.png", n)), func(w io.Writer) error {
			_, err := w.Write(buf.Bytes())
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPictureSameForAnyProcs: the density is drawn in bands on
// GOMAXPROCS goroutines, and the picture is the same bytes for any
// number of them (each band sums its own items in their order).
func TestPictureSameForAnyProcs(t *testing.T) {
	m, links := clusteredMap(20_000, 6, 5)
	o := PNGOptions{Width: 500, Height: 900, Labels: 20, Links: links} // four bands of rows
	draw := func(procs int) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var buf bytes.Buffer
		if err := WritePNG(&buf, m, o); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	one := draw(1)
	for _, procs := range []int{2, 3, 8} {
		if !bytes.Equal(draw(procs), one) {
			t.Errorf("GOMAXPROCS %d drew other bytes than GOMAXPROCS 1", procs)
		}
	}
}
