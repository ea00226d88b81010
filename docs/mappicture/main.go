// Command mappicture draws docs/map.png, the README's picture of the map:
//
//	go run ./docs/mappicture -out docs/map.png   (or: make map-picture)
//
// It generates a web with graphgen (100,000 domains, 800,000 links, 12
// planted communities, 80% of links inside), then does what a rebuild
// does with it (PageRank, communities, the layout of the top 200,000, with
// the packages and parameters the rebuild uses) and draws it as `mapthenet
// map --png` does, then keeps its 256 most common colours (see quantize).
// It needs no store and no network, and the same flags give the same
// picture.
package main

import (
	"bytes"
	"cmp"
	"context"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"
	"os"
	"slices"
	"time"

	"github.com/mapthenet/mapthenet/community"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/layout"
	"github.com/mapthenet/mapthenet/mapview"
	"github.com/mapthenet/mapthenet/rank"
	"github.com/mapthenet/mapthenet/schedule"
)

func main() {
	out := flag.String("out", "docs/map.png", "write the picture to `FILE`")
	domains := flag.Int("domains", 100_000, "domains in the generated web")
	communities := flag.Int("communities", 12, "planted communities")
	width := flag.Int("width", 1600, "picture width in pixels")
	height := flag.Int("height", 1000, "picture height in pixels")
	flag.Parse()
	if err := run(*out, *domains, *communities, *width, *height); err != nil {
		fmt.Fprintln(os.Stderr, "mappicture:", err)
		os.Exit(1)
	}
}

func run(out string, domains, communities, width, height int) error {
	ctx := context.Background()
	cfg := graphgen.Config{Domains: domains, Edges: int64(domains) * 8, Seed: 3, Communities: communities, Intra: 0.8}
	gen, err := graphgen.New(cfg)
	if err != nil {
		return err
	}
	var src, dst []uint32
	err = gen.Edges(func(s, d uint32, nofollow bool) error {
		if !nofollow {
			src, dst = append(src, s), append(dst, d)
		}
		return nil
	})
	if err != nil {
		return err
	}
	g, err := rank.BuildCSR(uint32(domains), src, dst, 0)
	if err != nil {
		return err
	}
	names := make([]string, domains)
	for v := range names {
		names[v] = gen.Name(uint32(v))
	}
	pr, err := rank.PageRank(ctx, g, rank.Params{})
	if err != nil {
		return err
	}
	ranks, order, err := rank.Ranks(g, pr.Scores, names)
	if err != nil {
		return err
	}
	found, err := community.Detect(ctx, g.N, g.In, community.Params{})
	if err != nil {
		return err
	}
	ids, _ := community.Stable(found.Community, len(found.Sizes), nil, 0)
	in := layout.MapInput{Graph: g, Order: order, Top: 200_000,
		Key:       func(v uint32) uint64 { return layout.Key(names[v]) },
		Community: func(v uint32) int32 { return ids[v] }}
	x, y, _, err := layout.Map(ctx, in, layout.Params{})
	if err != nil {
		return err
	}

	asOf := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	m := &mapview.Map{Snapshot: asOf.Format(data.SnapshotIDLayout), AsOf: asOf, Tiers: schedule.DefaultTiers, Known: int64(domains)}
	point := make([]int32, domains)
	for v := range point {
		point[v] = -1
	}
	for _, v := range order { // best rank first, as Load gives them
		if math.IsNaN(x[v]) {
			continue
		}
		point[v] = int32(len(m.Points))
		r := int64(ranks[v])
		m.Points = append(m.Points, mapview.Point{Domain: names[v], X: x[v], Y: y[v], Rank: r,
			Tier: int32(schedule.DefaultTiers.For(r).Number), Community: ids[v]})
		m.MaxRank = max(m.MaxRank, r)
	}
	links := mapview.NewLinks(m, mapview.DefaultLinkTop)
	for i := range src {
		links.Add(m, point[src[i]], point[dst[i]])
	}
	var full bytes.Buffer
	if err := mapview.WritePNG(&full, m, mapview.PNGOptions{Width: width, Height: height, Labels: 40, Links: links}); err != nil {
		return err
	}
	img, err := png.Decode(&full)
	if err != nil {
		return err
	}
	small := quantize(img)
	return mapview.WriteFile(out, func(w io.Writer) error {
		return (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(w, small)
	})
}

// quantize maps the picture to its 256 most common colours (counted at 5
// bits a channel, each the mean of what it counts), without dithering: a
// third of the full-colour file, which the README serves, for a picture
// that looks the same.
func quantize(img image.Image) *image.Paletted {
	type bucket struct{ r, g, b, n int }
	var buckets [1 << 15]bucket
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			k := &buckets[(r>>11)<<10|(g>>11)<<5|bl>>11]
			k.r += int(r >> 8)
			k.g += int(g >> 8)
			k.b += int(bl >> 8)
			k.n++
		}
	}
	order := make([]int, len(buckets))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(buckets[j].n, buckets[i].n) })
	var pal color.Palette
	for _, i := range order[:256] {
		if k := buckets[i]; k.n > 0 {
			pal = append(pal, color.RGBA{uint8(k.r / k.n), uint8(k.g / k.n), uint8(k.b / k.n), 255})
		}
	}
	out := image.NewPaletted(b, pal)
	draw.Draw(out, b, img, b.Min, draw.Src)
	return out
}
