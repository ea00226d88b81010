package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/mapview"
	"github.com/mapthenet/mapthenet/snapshot"
)

type mapFlags struct {
	Snapshot string
	PNG      string
	HTML     string
	Width    int
	Height   int
	Color    string
	Labels   int
	Points   int
}

func newMapCommand(a *app) *cobra.Command {
	var fl mapFlags
	cmd := &cobra.Command{
		Use:   "map --png FILE | --html FILE",
		Short: "Draw the current snapshot's map as a picture or a page to explore",
		Long: `map draws the domains the rebuild placed on the map (domains.parquet's
map_x, map_y) of the current snapshot, or of --snapshot ID.

--png FILE writes a picture: one point per placed domain, bigger for a
higher rank, coloured by community (the biggest get a colour and are named
in the legend by their top domains; or --color tier|tld|operator: for tld
and operator the nine most common get a colour, the rest are grey), labels for the top --labels
domains where they fit without overlapping, a legend and the snapshot's
date. Under the points, faint lines show the followed links among the
top 20,000 domains, and grey bands join the communities with the most
links between them. A million domains draw in about a second: small
points are summed per pixel, so crowded regions read darker.

--html FILE writes one self-contained page (it needs no network: the
points are inside it) to explore the map in a browser: drag to pan, wheel
or double-click to zoom, hover a point for its domain, rank, tier and link
words, and type a domain (or a URL) in the search box to fly to it. The
page holds the best-ranked --html-points domains (default 500,000: a
browser loads them in about a second; 0 means all).

Give --png, --html or both. Files are written whole or not at all (a
temporary file renamed into place), so a web server may serve them while
map runs from cron.`,
		Example: `  mapthenet map --png map.png
  mapthenet map --html map.html --color operator
  mapthenet map --png map.png --html map.html --width 3000 --height 2000 --labels 80
  mapthenet map --snapshot 2026-12-01T030000Z --png old-map.png`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runMap(cmd.OutOrStdout(), fl)
		},
	}
	f := cmd.Flags()
	f.StringVar(&fl.Snapshot, "snapshot", "", "draw this snapshot id instead of the current one")
	f.StringVar(&fl.PNG, "png", "", "write the map as a PNG picture to FILE")
	f.StringVar(&fl.HTML, "html", "", "write the map as a self-contained HTML page to FILE")
	f.IntVar(&fl.Width, "width", 1600, "picture width in pixels (--png)")
	f.IntVar(&fl.Height, "height", 1200, "picture height in pixels (--png)")
	f.StringVar(&fl.Color, "color", "community", "what colour shows: community, tier, tld or operator")
	f.IntVar(&fl.Labels, "labels", 40, "label up to N of the top domains in the picture, where they fit (--png)")
	f.IntVar(&fl.Points, "html-points", mapview.DefaultHTMLPoints, "the page holds at most N domains, the best ranked; 0: all (--html)")
	return cmd
}

func (a *app) runMap(w io.Writer, fl mapFlags) error {
	if fl.PNG == "" && fl.HTML == "" {
		return usagef("give --png FILE, --html FILE or both")
	}
	color, err := mapview.ParseColorBy(fl.Color)
	if err != nil {
		return usagef("--color: %v", err)
	}
	if fl.Labels < 0 {
		return usagef("--labels %d: want 0 or more", fl.Labels)
	}
	if fl.Points < 0 {
		return usagef("--html-points %d: want 0 (all) or more", fl.Points)
	}
	if fl.PNG != "" {
		if err := mapview.CheckSize(fl.Width, fl.Height); err != nil {
			return usagef("--width/--height: %v", err)
		}
	}
	s, err := snapshot.Open(a.DataDir, fl.Snapshot)
	if err != nil {
		return err
	}
	return writeMaps(w, s, mapOutputs{PNG: fl.PNG, HTML: fl.HTML, Width: fl.Width, Height: fl.Height, Color: color, Labels: fl.Labels, Points: fl.Points})
}

// mapOutputs is what writeMaps draws; demo uses it too.
type mapOutputs struct {
	PNG, HTML     string
	Width, Height int
	Color         mapview.ColorBy
	Labels        int
	Points        int // the page's at most; 0: all
}

// writeMaps loads the snapshot's map once and writes each output asked for.
func writeMaps(w io.Writer, s *snapshot.Snapshot, o mapOutputs) error {
	m, err := mapview.Load(s, mapview.DefaultWords)
	if err != nil {
		return err
	}
	if o.PNG != "" {
		links, err := mapview.LoadLinks(s, m, mapview.DefaultLinkTop)
		if err != nil {
			return err
		}
		err = mapview.WriteFile(o.PNG, func(f io.Writer) error {
			return mapview.WritePNG(f, m, mapview.PNGOptions{Width: o.Width, Height: o.Height, Color: o.Color, Labels: o.Labels, Links: links})
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "wrote %s: %d×%d picture of %d placed domains (snapshot %s)\n", o.PNG, o.Width, o.Height, len(m.Points), s.ID)
	}
	if o.HTML != "" {
		err := mapview.WriteFile(o.HTML, func(f io.Writer) error {
			return mapview.WriteHTML(f, m, mapview.HTMLOptions{Color: o.Color, MaxPoints: o.Points})
		})
		if err != nil {
			return err
		}
		what := fmt.Sprintf("%d placed domains", len(m.Points))
		if o.Points > 0 && len(m.Points) > o.Points {
			what = fmt.Sprintf("the top %d of %d placed domains", o.Points, len(m.Points))
		}
		fmt.Fprintf(w, "wrote %s: page of %s (snapshot %s); open it in a browser\n", o.HTML, what, s.ID)
	}
	return nil
}
