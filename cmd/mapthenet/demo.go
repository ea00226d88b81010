package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/mapview"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/simweb"
	"github.com/mapthenet/mapthenet/snapshot"
)

type demoFlags struct {
	Sites    int
	Seed     uint64
	MinDelay time.Duration
	Out      string
	Top      int
}

func newDemoCommand(a *app) *cobra.Command {
	var fl demoFlags
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Crawl a simulated web on loopback, rebuild it, and show the top ranks",
		Long: `demo starts a simulated web of a few hundred sites on 127.0.0.1 (HTTP and
HTTPS on one port, its own CA), crawls it for real with the crawler's
every rule (robots.txt, pace, signing, redirects, outcomes) but a small
--min-delay, rebuilds a ranked snapshot, prints the top domains and a
DuckDB query to try on the snapshot's Parquet files, and ends by drawing
the map: map.png (a picture) and map.html (a page to explore in a
browser) in the demo's directory.

Everything goes to a fresh directory (--out, default a new one under the
system's temporary directory), never to --data-dir: the demo does not
touch a real crawl's data. --out must be new, empty, or an earlier demo's:
demo refuses a directory holding anything it did not make.`,
		Example: `  mapthenet demo
  mapthenet demo --sites 1000 --out /tmp/mtn-demo`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runDemo(cmd, fl)
		},
	}
	f := cmd.Flags()
	f.IntVar(&fl.Sites, "sites", 300, "generated sites in the simulated web (besides a few special ones)")
	f.Uint64Var(&fl.Seed, "seed", 1, "the simulated web's seed: the same seed gives the same web")
	f.DurationVar(&fl.MinDelay, "min-delay", 10*time.Millisecond, "least time between two requests to one site")
	f.StringVar(&fl.Out, "out", "", "new or empty directory (or an earlier demo's) for the demo's store, keys and snapshots (default: a new temporary one)")
	f.IntVar(&fl.Top, "top", 20, "how many top domains to print")
	return cmd
}

func (a *app) runDemo(cmd *cobra.Command, fl demoFlags) error {
	ctx := cmd.Context()
	out, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	if fl.Sites < 1 || fl.Top < 1 {
		return usagef("--sites and --top must be at least 1")
	}
	dir := fl.Out
	if dir == "" {
		d, err := os.MkdirTemp("", "mapthenet-demo-")
		if err != nil {
			return err
		}
		dir = d
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := claimDemoDir(dir); err != nil {
		return err
	}
	start := time.Now()

	// The simulated web, without the kinds that only wait (a robots.txt
	// that never answers, slow servers, a 2 s Crawl-delay): they show
	// nothing new and would make the demo last.
	web, err := simweb.New(simweb.Config{
		Seed: fl.Seed, Sites: fl.Sites, SpecialShare: 0.1, Dir: dir,
		Skip:   []simweb.Kind{simweb.KindRobotsHang, simweb.KindSlow, simweb.KindCrawlDelay},
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return err
	}
	if err := web.Start(); err != nil {
		return err
	}
	defer web.Close()
	seeds := filepath.Join(dir, "seeds.txt")
	if err := web.WriteSeeds(seeds); err != nil {
		return err
	}
	fmt.Fprintf(out, "simulated web: %d sites on %s (CA %s)\n", len(web.Sites()), web.Addr(), web.CAFile())

	store, err := shard.Open(storePath(dir), shard.Options{Graph: graph.Options{Logger: a.logger}, Create: true})
	if err != nil {
		return err
	}
	defer store.Close()
	ct, err := fetch.ParseConnectTo(web.ConnectTo())
	if err != nil {
		return err
	}
	var progress io.Writer
	if isTerminal(stderr) {
		progress = stderr
	}
	// Per-visit log lines would drown the demo's output: warnings only.
	quiet := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	stats, err := crawl.Run(ctx, store, crawl.Options{
		MinDelay:    fl.MinDelay,
		MinDelaySet: true,
		// The shared platform's pace, scaled down like --min-delay.
		Platforms:  []crawl.Platform{{Suffix: "neocities.org", Gap: 10 * fl.MinDelay}},
		ConnectTo:  []fetch.ConnectTo{ct},
		CACertFile: web.CAFile(),
		KeysDir:    filepath.Join(dir, "keys"),
		DataDir:    dir,
		Seeds:      []string{seeds},
		UntilIdle:  true,
		Progress:   progress,
		Logger:     quiet,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "crawled: %d visits, %d pages, %d requests in %.1fs; outcomes: %s\n",
		stats.Visits, stats.Pages, len(web.Requests()), stats.Elapsed.Seconds(), outcomeList(stats))
	violations := web.CheckAll(web.Requests(), simweb.Rules{
		MinDelay: fl.MinDelay, Slack: time.Millisecond, UserAgent: crawl.DefaultUserAgent,
		Platforms: map[string]time.Duration{"neocities.org": 10 * fl.MinDelay},
	})
	fmt.Fprintf(out, "politeness checks on the server's request log: %d violations\n", len(violations))
	for i, v := range violations {
		if i == 10 {
			fmt.Fprintf(out, "  ... and %d more\n", len(violations)-10)
			break
		}
		fmt.Fprintf(out, "  %s\n", v)
	}

	m, err := rebuild.Run(ctx, store, rebuild.Options{DataDir: dir, Now: time.Now().UTC(), Logger: quiet})
	if err != nil {
		return fmt.Errorf("rebuild: %w", err)
	}
	if err := store.Close(); err != nil {
		return err
	}
	snap, err := snapshot.Open(dir, m.ID)
	if err != nil {
		return err
	}
	top, err := snap.Top(fl.Top)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "rebuilt snapshot %s: %d domains, %d edges\n\n", m.ID, m.Counts[data.DomainsFile], m.Counts[data.EdgesFile])
	fmt.Fprintf(out, "%5s  %-28s %10s %11s\n", "rank", "domain", "in_domains", "score")
	for _, r := range top {
		fmt.Fprintf(out, "%5d  %-28s %10d %11.6f\n", *r.Rank, r.Domain, r.InDomains, r.Score)
	}
	if err := demoMap(out, snap, dir); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nfinished in %.1fs. Try (DuckDB's CLI: https://duckdb.org/docs/installation):\n  duckdb -c \"SELECT domain, rank, in_domains, last_outcome FROM '%s' ORDER BY rank LIMIT 20\"\n",
		time.Since(start).Seconds(), snapshot.Local(dir).CurrentPath(data.DomainsFile))
	// The binary as it was run (./bin/mapthenet after make demo), so that
	// the line runs as pasted.
	fmt.Fprintf(out, "  %s --data-dir %s rank --top 20\n", os.Args[0], dir)
	return nil
}

// demoMap writes the snapshot's map as a picture and a page into the demo's
// directory and says where. A snapshot with no placed domain is said so,
// not a failure: the demo's web may be too small for the layout.
func demoMap(out io.Writer, snap *snapshot.Snapshot, dir string) error {
	fmt.Fprintln(out)
	err := writeMaps(out, snap, mapOutputs{
		PNG: filepath.Join(dir, "map.png"), HTML: filepath.Join(dir, "map.html"),
		Width: 1600, Height: 1200, Color: mapview.ColorTier, Labels: 40, Points: mapview.DefaultHTMLPoints,
	})
	if errors.Is(err, mapview.ErrNoPlacedDomains) {
		fmt.Fprintf(out, "map: not drawn: %v\n", err)
		return nil
	}
	return err
}

// outcomeList says how many visits ended in each outcome, in data's order.
func outcomeList(s crawl.Stats) string {
	var parts []string
	for _, o := range data.Outcomes {
		if n := s.Outcomes[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", o, n))
		}
	}
	return strings.Join(parts, ", ")
}
