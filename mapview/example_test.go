package mapview_test

import (
	"bytes"
	"fmt"
	"image/png"
	"time"

	"github.com/mapthenet/mapthenet/mapview"
	"github.com/mapthenet/mapthenet/schedule"
)

// A Map usually comes from mapview.Load(snapshot, mapview.DefaultWords);
// here it is made by hand: points best rank first, MaxRank their largest.
func Example() {
	m := &mapview.Map{
		Snapshot: "2026-12-01T030000Z", AsOf: time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC),
		Tiers: schedule.DefaultTiers, Known: 3, MaxRank: 2,
		Points: []mapview.Point{
			{Domain: "a.example", X: 0, Y: 0, Rank: 1, Tier: 1, Words: []string{"news"}},
			{Domain: "b.example", X: 1, Y: 2, Rank: 2, Tier: 1},
			{Domain: "c.example", X: -1, Y: 1, Tier: 6},
		},
	}
	var pic, page bytes.Buffer
	if err := mapview.WritePNG(&pic, m, mapview.PNGOptions{Width: 400, Height: 300, Labels: 10}); err != nil {
		fmt.Println(err)
		return
	}
	if err := mapview.WriteHTML(&page, m, mapview.HTMLOptions{Color: mapview.ColorTLD}); err != nil {
		fmt.Println(err)
		return
	}
	cfg, err := png.DecodeConfig(&pic)
	fmt.Println(cfg.Width, cfg.Height, err, bytes.Contains(page.Bytes(), []byte(`"c.example"`)))
	// Output: 400 300 <nil> true
}
