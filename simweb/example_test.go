package simweb_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mapthenet/mapthenet/simweb"
)

// A test serves a web, points the crawler at it, then checks the request
// log and the edges.
func Example() {
	w, err := simweb.New(simweb.Config{Seed: 1, Sites: 10,
		Skip: []simweb.Kind{simweb.KindRobotsHang, simweb.KindSlow, simweb.KindCrawlDelay}})
	if err != nil {
		panic(err)
	}
	defer w.Close()
	if err := w.Start(); err != nil {
		panic(err)
	}
	seeds := filepath.Join(os.TempDir(), "simweb-example-seeds.txt")
	defer os.Remove(seeds)
	if err := w.WriteSeeds(seeds); err != nil {
		panic(err)
	}
	// The crawl: mapthenet crawl --seeds SEEDS --until-idle \
	//   --connect-to w.ConnectTo() --ca-cert w.CAFile() --min-delay 20ms
	// (or crawl.Run with the same options).

	violations := w.CheckAll(w.Requests(), simweb.Rules{MinDelay: 20 * time.Millisecond, Slack: 3 * time.Millisecond})
	fmt.Println("sites:", len(w.Sites()), "violations:", len(violations))
	s, _ := w.Site("moved.example")
	fmt.Println(s.Kind, s.Outcome, s.HTTPStatus)
	for _, e := range w.ExpectedEdges() {
		if e.Src == "moved.example" {
			fmt.Println(e.Src, "->", e.Dst, "nofollow:", e.Nofollow)
		}
	}
	// Output:
	// sites: 42 violations: 0
	// moved moved 301
	// moved.example -> moved-here.example nofollow: false
}
