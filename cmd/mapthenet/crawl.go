package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/rebuild"
)

type crawlFlags struct {
	Seeds         []string
	Exclude       []string
	UntilIdle     bool
	MaxDuration   time.Duration
	MaxSites      int
	MinDelay      time.Duration
	IPDelay       time.Duration
	ConnectTo     []string
	CACert        string
	UserAgent     string
	RobotsToken   string
	ASNDB         string
	MinInDomains  int
	SitesInFlight int
	MaxConns      int
	Platforms     []string
	AgentURL      string
	AgentForm     string
}

func newCrawlCommand() *cobra.Command {
	var fl crawlFlags
	cmd := &cobra.Command{
		Use:   "crawl",
		Short: "Visit due domains politely and record their domain-to-domain links",
		Long: `crawl visits the domains that are due: those the current snapshot's
schedule (rebuilds/current/schedule.parquet) lists as due, then the --seeds,
then new domains its visits find through followed links (most linking
domains first). Each visit reads robots.txt fresh, then the home page and
same-site pages breadth-first, at most one request at a time per site and
--min-delay (or the site's Crawl-delay) apart. Only domain-to-domain links
are recorded in the store; never page text or addresses.

Every request is signed (Web Bot Auth). On first use crawl creates a key
in <data-dir>/keys/ and says so: publish its key directory (mapthenet keys
directory) before crawling the real web.

Without --until-idle, crawl keeps running and looks for newly due domains
every minute; stop it with Ctrl-C or SIGTERM: visits in flight are dropped
whole, never recorded half-done.`,
		Example: `  # first crawl from the shipped seed list, until nothing is due
  mapthenet crawl --seeds data/seeds/default.txt --until-idle

  # a nightly cron run of at most 6 hours
  mapthenet crawl --max-duration 6h

  # against a local test server (curl's --connect-to meaning)
  mapthenet crawl --seeds seeds.txt --until-idle --min-delay 10ms \
      --connect-to ::127.0.0.1:8443 --ca-cert test-ca.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCrawl(cmd, fl)
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&fl.Seeds, "seeds", nil, "file of seed URLs or domains, one a line, # comments (repeatable)")
	f.StringArrayVar(&fl.Exclude, "exclude", nil, "file of domains never to crawl, same format (repeatable; they stay ranked)")
	f.BoolVar(&fl.UntilIdle, "until-idle", false, "exit when nothing is due")
	f.DurationVar(&fl.MaxDuration, "max-duration", 0, "stop after this long (0: no limit)")
	f.IntVar(&fl.MaxSites, "max-sites", 0, "visit at most this many domains (0: no limit)")
	f.DurationVar(&fl.MinDelay, "min-delay", crawl.DefaultMinDelay, "least time between request starts on one site (Crawl-delay may ask for more)")
	f.DurationVar(&fl.IPDelay, "ip-delay", 0, "make all sites on one IP address share one pace of this delay (0: off)")
	f.StringArrayVar(&fl.ConnectTo, "connect-to", nil, "HOST:PORT:ADDR:PORT: connect there instead, as curl does; empty HOST or PORT match any (repeatable)")
	f.StringVar(&fl.CACert, "ca-cert", "", "PEM file of CA certificates trusted besides the system's")
	f.StringVar(&fl.UserAgent, "user-agent", crawl.DefaultUserAgent, "User-Agent header")
	f.StringVar(&fl.RobotsToken, "robots-token", crawl.DefaultRobotsToken, "product token looked for in robots.txt and meta robots")
	f.StringVar(&fl.ASNDB, "asn-db", "", "ip2asn TSV file (range_start range_end AS_number country AS_description; .gz too) for network operators")
	f.IntVar(&fl.MinInDomains, "min-in-domains", 1, "visit a domain found in this run once this many domains link to it")
	f.IntVar(&fl.SitesInFlight, "max-sites-in-flight", crawl.DefaultSitesInFlight, "sites visited at once")
	f.IntVar(&fl.MaxConns, "max-conns", crawl.DefaultMaxConns, "open connections at once")
	f.StringVar(&fl.AgentURL, "signature-agent", webbotauth.DefaultAgentURL, "URL of our published key directory, sent as Signature-Agent")
	f.StringVar(&fl.AgentForm, "signature-agent-form", "dictionary", "how Signature-Agent is sent: dictionary (latest draft) or string (quoted URL, as in Cloudflare's guide)")
	f.StringArrayVar(&fl.Platforms, "platform", nil, "SUFFIX=DELAY: sites under SUFFIX share one pace (repeatable; default neocities.org=2s)")
	addNowFlag(cmd)
	return cmd
}

func runCrawl(cmd *cobra.Command, fl crawlFlags) error {
	now, err := global.now()
	if err != nil {
		return err
	}
	opts, err := crawlOptions(fl, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	opts.Now = now
	store, err := graph.Open(filepath.Join(global.DataDir, "store"), graph.Options{Logger: global.logger})
	if err != nil {
		if errors.Is(err, graph.ErrLocked) {
			return busyError{err}
		}
		return err
	}
	defer store.Close()
	// While the crawl holds the store, a rebuild (from cron) asks it over
	// <data-dir>/crawl.sock to run in this process.
	sock := filepath.Join(global.DataDir, control.SocketName)
	srv, err := control.Serve(sock, map[string]control.Handler{
		"rebuild": func(ctx context.Context, args json.RawMessage) (any, error) {
			var ra RebuildRequest
			if err := json.Unmarshal(args, &ra); err != nil {
				return nil, err
			}
			return rebuild.Run(ctx, store, rebuild.Options{DataDir: global.DataDir, Now: ra.Now,
				Keep: ra.Keep, Tiers: ra.Tiers, Logger: global.logger})
		},
	}, global.logger)
	if err != nil {
		global.logger.Warn("no control socket: a rebuild cannot run while this crawl does", "err", err)
	} else {
		defer srv.Close()
	}
	stats, err := crawl.Run(cmd.Context(), store, opts)
	global.logger.Info("crawl done", "visits", stats.Visits, "pages", stats.Pages, "abandoned", stats.Abandoned,
		"discovered", stats.Discovered, "seconds", stats.Elapsed.Seconds())
	if err != nil {
		return err
	}
	return store.Close()
}

// RebuildRequest is the args of the control socket's "rebuild" command:
// `rebuild` sends it (control.Call) when a running crawl holds the store.
type RebuildRequest struct {
	Now   time.Time      `json:"now"`
	Keep  int            `json:"keep,omitempty"`
	Tiers data.TierTable `json:"tiers,omitempty"`
}

// crawlOptions turns flags into crawl.Options (without the store or --now).
func crawlOptions(fl crawlFlags, stderr io.Writer) (crawl.Options, error) {
	o := crawl.Options{
		UserAgent:     fl.UserAgent,
		RobotsToken:   fl.RobotsToken,
		MinDelay:      fl.MinDelay,
		MinDelaySet:   true,
		IPDelay:       fl.IPDelay,
		CACertFile:    fl.CACert,
		KeysDir:       filepath.Join(global.DataDir, "keys"),
		DataDir:       global.DataDir,
		Seeds:         fl.Seeds,
		Exclude:       fl.Exclude,
		UntilIdle:     fl.UntilIdle,
		MaxDuration:   fl.MaxDuration,
		MaxSites:      fl.MaxSites,
		MinInDomains:  fl.MinInDomains,
		SitesInFlight: fl.SitesInFlight,
		MaxConns:      fl.MaxConns,
		Logger:        global.logger,
	}
	form, err := webbotauth.ParseAgentForm(fl.AgentForm)
	if err != nil {
		return o, usagef("--signature-agent-form: %v", err)
	}
	if u, err := url.Parse(fl.AgentURL); err != nil || u.Scheme != "https" || u.Host == "" {
		return o, usagef("--signature-agent %q: want an https URL such as %s", fl.AgentURL, webbotauth.DefaultAgentURL)
	}
	o.SignatureAgentURL, o.SignatureAgentForm = fl.AgentURL, form
	if fl.MinDelay < 0 || fl.IPDelay < 0 || fl.MaxDuration < 0 || fl.MaxSites < 0 {
		return o, usagef("durations and counts must not be negative")
	}
	for _, s := range fl.ConnectTo {
		c, err := fetch.ParseConnectTo(s)
		if err != nil {
			return o, usageError{err}
		}
		o.ConnectTo = append(o.ConnectTo, c)
	}
	if len(fl.Platforms) > 0 {
		o.Platforms = []crawl.Platform{}
		for _, s := range fl.Platforms {
			p, err := crawl.ParsePlatform(s)
			if err != nil {
				return o, usageError{err}
			}
			o.Platforms = append(o.Platforms, p)
		}
	}
	for _, f := range append(append([]string(nil), fl.Seeds...), fl.Exclude...) {
		if _, err := os.Stat(f); err != nil {
			return o, usagef("%v", err)
		}
	}
	if fl.ASNDB != "" {
		db, err := crawl.LoadASN(fl.ASNDB)
		if err != nil {
			return o, err
		}
		o.ASN = db
	}
	if isTerminal(stderr) {
		o.Progress = stderr
	}
	return o, nil
}

// isTerminal reports whether w is a character device (a terminal): progress
// counts go there, logs alone elsewhere.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

var _ = fmt.Sprint
