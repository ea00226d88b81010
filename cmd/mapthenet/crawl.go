package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/buildinfo"
	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/fleet"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
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
	Policy        policyFlags // --tiers, --min-in-domains (policy.go)
	SitesInFlight int
	MaxConns      int
	Platforms     []string
	MetricsAddr   string
	Recheck       time.Duration
	AgentURL      string
	AgentForm     string
	NameCache     int
	Identity      identityFlags // --from, --crawler-info (identity.go)
	Create        bool
	Shards        int
	Fleet         fleetFlags    // --fleet, --node (fleet.go)
	Snapshots     string        // --snapshots: a fleet node's snapshot store
	LeaseTTL      time.Duration // --lease-ttl: a fleet node's lease
	ResponseTime  time.Duration // --response-timeout
}

func newCrawlCommand(a *app) *cobra.Command {
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

A crawl of the real web says who runs it: --robots-token, a --user-agent
naming your bot page, --from (your e-mail address) and --signature-agent,
usually from <data-dir>/config.toml as mapthenet init writes it. Without
them crawl refuses to start (exit 2), unless --connect-to maps every host
(::ADDR:PORT: a test or simulated web), which uses the built-in identity.

Every request is signed (Web Bot Auth). On first use crawl creates a key
in <data-dir>/keys/ and says so: publish its key directory (mapthenet keys
directory) before crawling the real web.

Without --until-idle, crawl keeps running and looks for newly due domains
every minute (--recheck), and for a new rebuilds/current schedule (a rebuild run from
cron meanwhile runs inside this process: see rebuild --help). Stop it with
Ctrl-C or SIGTERM: visits in flight are dropped whole, never recorded
half-done, every finished visit is written, and crawl exits 0.

The revisit policy is shared with rebuild: a first visit (a seed, a domain
found during the run) reads the lowest tier's pages of --tiers, and a
domain the run finds is visited once --min-in-domains of its visited
domains link to it with followed links (the others wait for the next
rebuild's schedule, which applies the same threshold). Set both in
<data-dir>/config.toml so that crawl and rebuild agree.

Only one crawl may use a data directory: a second one exits with status 3
and names the first's pid.

With --fleet URL --node NAME --snapshots LOCATION the crawl is one node of a
fleet (README, "More than one machine"): the data dir holds local copies of
the fleet's shards (made on the first run), the node takes the shards etcd
gives it and visits only their due domains and seeds, pulls the fleet's
schedule from LOCATION every --recheck, and runs until stopped (SIGTERM
hands its shards over). Domains its visits find wait for the next fleet
rebuild (rebuild --fleet).

--metrics-addr serves Prometheus metrics (mapthenet_crawl_requests_total
by status class, visits_total by outcome, robots_total by result,
bytes_read_total, pages_total, domains_due, domains_waiting,
sites_in_flight, and the Go and process collectors) at /metrics.`,
		Example: `  # first crawl from the shipped seed list, until nothing is due
  mapthenet crawl --seeds data/seeds/default.txt --until-idle

  # a nightly cron run of at most 6 hours
  mapthenet crawl --max-duration 6h

  # one node of a fleet (mapthenet fleet init made it)
  mapthenet crawl --fleet etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379 --node crawl-1 \
      --snapshots s3://mapthenet/fleet --seeds data/seeds/default.txt

  # against a local test server (curl's --connect-to meaning)
  mapthenet crawl --seeds seeds.txt --until-idle --min-delay 10ms \
      --connect-to ::127.0.0.1:8443 --ca-cert test-ca.pem`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runCrawl(cmd, fl)
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
	f.StringArrayVar(&fl.ConnectTo, "connect-to", nil, "HOST:PORT:ADDR:PORT: connect there instead, as curl does; empty HOST or PORT match any; matched hosts skip the public-address guard (repeatable)")
	f.StringVar(&fl.CACert, "ca-cert", "", "PEM file of CA certificates trusted besides the system's")
	f.StringVar(&fl.UserAgent, "user-agent", crawl.DefaultUserAgent, "User-Agent header")
	f.StringVar(&fl.RobotsToken, "robots-token", crawl.DefaultRobotsToken, "product token looked for in robots.txt and meta robots")
	f.StringVar(&fl.ASNDB, "asn-db", "", "ip2asn TSV file (range_start range_end AS_number country AS_description; .gz too) for network operators")
	addPolicyFlags(f, &fl.Policy)
	f.IntVar(&fl.SitesInFlight, "max-sites-in-flight", crawl.DefaultSitesInFlight, "sites visited at once")
	f.IntVar(&fl.MaxConns, "max-conns", crawl.DefaultMaxConns, "open connections at once")
	f.StringVar(&fl.AgentURL, "signature-agent", webbotauth.DefaultAgentURL, "URL of our published key directory, sent as Signature-Agent")
	f.StringVar(&fl.AgentForm, "signature-agent-form", "dictionary", "how Signature-Agent is sent: dictionary (latest draft) or string (quoted URL, as in Cloudflare's guide)")
	f.StringArrayVar(&fl.Platforms, "platform", nil, "SUFFIX=DELAY: sites under SUFFIX share one pace (repeatable; default neocities.org=2s)")
	f.DurationVar(&fl.Recheck, "recheck", time.Minute, "how often a running crawl looks for a new rebuilds/current schedule and for newly due domains")
	f.IntVar(&fl.NameCache, "name-cache", graph.DefaultNameCache, "domain names kept in memory to spare a store read per link (about 30 bytes a name; -1: none)")
	addIdentityFlags(f, &fl.Identity)
	f.StringVar(&fl.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics, e.g. 127.0.0.1:9464 (default: off)")
	f.BoolVar(&fl.Create, "create", false, "start a new store when the data dir holds none (without it, crawl refuses: a mistyped --data-dir is not a new store)")
	f.IntVar(&fl.Shards, "shards", 0, "with --create: make a store of this many shards, committed in parallel (default 1); on an existing store it must be the store's (0: take the store's; store reshard changes it)")
	addFleetFlag(f, &fl.Fleet)
	f.StringVar(&fl.Fleet.Node, "node", "", "this node's name in the fleet, unique (default: the host name)")
	f.StringVar(&fl.Snapshots, "snapshots", "", "with --fleet: the fleet's snapshot store, DIR or s3://bucket/prefix (schedules are pulled from it, export parts and shard backups go to it)")
	f.DurationVar(&fl.LeaseTTL, "lease-ttl", fleet.DefaultTTL, "with --fleet: the node's lease in etcd (whole seconds): its shards move this long after it stops renewing")
	f.DurationVar(&fl.ResponseTime, "response-timeout", crawl.DefaultResponseTimeout, "longest one response may take, whole body (a fleet's takeover wait includes it)")
	addNowFlag(cmd, a)
	return cmd
}

func (a *app) runCrawl(cmd *cobra.Command, fl crawlFlags) error {
	if err := checkCrawlFleet(fl.Fleet); err != nil {
		return err
	}
	now, err := a.now()
	if err != nil {
		return err
	}
	opts, err := a.crawlOptions(fl, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if err := applyIdentity(cmd.Flags(), fl.Identity, &opts); err != nil {
		return err
	}
	opts.Now = now
	if fl.ResponseTime <= 0 {
		return usagef("--response-timeout %v: want a positive duration", fl.ResponseTime)
	}
	opts.ResponseTimeout = fl.ResponseTime
	if fl.Fleet.URL != "" {
		return a.runFleetCrawl(cmd, fl, opts)
	}
	if fl.Shards < 0 || fl.Shards > shard.MaxShards {
		return usagef("--shards %d: want 1 to %d (0: the store's)", fl.Shards, shard.MaxShards)
	}
	ownerPath := filepath.Join(a.DataDir, control.StoreOwnerName)
	store, err := openStore(a.DataDir, shard.Options{Graph: graph.Options{Logger: a.logger, NameCache: nameCache(fl.NameCache)},
		Create: fl.Create, Shards: fl.Shards, Platforms: platformSuffixes(opts.Platforms)})
	if err != nil {
		if errors.Is(err, graph.ErrLocked) {
			// Badger's lock decided; the owner file only names the holder.
			holder := control.ReadOwner(ownerPath)
			why := "one crawl at a time"
			if holder.Command != "mapthenet crawl" {
				why = "try again when it has finished"
			}
			return busyError{fmt.Errorf("data dir %s is in use by %s: %s", a.DataDir, holder, why)}
		}
		return err
	}
	defer store.Close()
	if err := control.WriteOwner(ownerPath, control.Self("mapthenet crawl", time.Now())); err != nil {
		a.logger.Warn("cannot say who holds the store", "err", err)
	}
	logCrawlStart(a.logger, a.DataDir, opts, store)
	defer os.Remove(ownerPath)
	// While the crawl holds the store, a rebuild (from cron) asks it over
	// <data-dir>/crawl.sock to run in this process, on a consistent view of
	// the store, while the crawl goes on.
	// The metrics always count: `mapthenet status` reads them over
	// crawl.sock; --metrics-addr also serves them to Prometheus.
	reg, m := crawl.NewRegistry()
	opts.Metrics = m
	if fl.MetricsAddr != "" {
		ms, err := crawl.ServeMetrics(fl.MetricsAddr, reg, a.logger)
		if err != nil {
			return usagef("--metrics-addr %s: %v", fl.MetricsAddr, err)
		}
		defer ms.Close()
	}
	if opts.Progress == nil {
		opts.LogEvery = time.Minute // a log file gets the counts a terminal sees
	}
	srv, err := serveControl(store, a.DataDir, a.logger, m.Activity())
	if err != nil {
		a.logger.Warn("no control socket: a rebuild cannot run while this crawl does", "err", err)
	} else {
		defer srv.Close()
	}
	stats, err := crawl.Run(cmd.Context(), store, opts)
	counts := []any{"visits", stats.Visits, "pages", stats.Pages, "abandoned", stats.Abandoned,
		"discovered", stats.Discovered, "seconds", stats.Elapsed.Seconds()}
	if err != nil {
		// Not "crawl done": the run failed, and the error follows as the last line.
		a.logger.Warn("crawl stopped", counts...)
		return err
	}
	a.logger.Info("crawl done", counts...)
	if srv != nil {
		// Before the store closes: a crawl that ended on its own
		// (--until-idle, --max-duration, --max-sites) lets a rebuild it
		// runs for cron finish; after SIGINT/SIGTERM (the context is done)
		// that rebuild is cancelled.
		srv.Shutdown(cmd.Context())
	}
	return store.Close()
}

// serveControl answers other commands on <data-dir>/crawl.sock while the
// crawl holds the store.
func serveControl(store *shard.Store, dataDir string, log *slog.Logger, activity *crawl.Activity) (*control.Server, error) {
	return control.Serve(filepath.Join(dataDir, control.SocketName), map[string]control.Handler{
		"status": func(context.Context, json.RawMessage) (any, error) {
			if activity == nil {
				return nil, errors.New("this crawl keeps no activity record")
			}
			return activity.Report(), nil
		},
		"rebuild": func(ctx context.Context, args json.RawMessage) (any, error) {
			return rebuildHere(ctx, store, dataDir, log, args)
		},
		"remove": func(ctx context.Context, args json.RawMessage) (any, error) {
			return removeHere(ctx, store, dataDir, log, args)
		},
		"backup": func(ctx context.Context, args json.RawMessage) (any, error) { return backupHere(ctx, store, args) },
	}, log)
}

// rebuildHere runs a rebuild another process asked for (RebuildRequest)
// on this crawl's store. One at a time, across processes too: a second
// refuses with ErrBusy, naming the first.
func rebuildHere(ctx context.Context, store *shard.Store, dataDir string, log *slog.Logger, args json.RawMessage) (*data.Manifest, error) {
	var req RebuildRequest
	if err := json.Unmarshal(args, &req); err != nil {
		return nil, fmt.Errorf("rebuild request: %w", err)
	}
	opts, err := rebuildOptions(ctx, dataDir, req.Flags, req.Now, log)
	if err != nil {
		return nil, err
	}
	opts.Logger = log.With("rebuild", req.Now.UTC().Format(data.SnapshotIDLayout))
	release, err := lockRebuild(dataDir, "mapthenet crawl")
	if err != nil {
		return nil, err
	}
	defer release()
	cleanSnapshotCopies(ctx, opts.Storage, log)
	m, err := rebuild.Run(ctx, store, opts)
	if errors.Is(err, snapshot.ErrBusy) {
		return nil, control.Busy(err.Error())
	}
	return m, err
}

// crawlOptions turns flags into crawl.Options (without the store or --now).
func (a *app) crawlOptions(fl crawlFlags, stderr io.Writer) (crawl.Options, error) {
	if err := checkRobotsToken(fl.RobotsToken); err != nil {
		return crawl.Options{}, err
	}
	o := crawl.Options{
		UserAgent:     fl.UserAgent,
		RobotsToken:   fl.RobotsToken,
		MinDelay:      fl.MinDelay,
		MinDelaySet:   true,
		IPDelay:       fl.IPDelay,
		CACertFile:    fl.CACert,
		KeysDir:       filepath.Join(a.DataDir, "keys"),
		DataDir:       a.DataDir,
		Seeds:         fl.Seeds,
		Exclude:       fl.Exclude,
		UntilIdle:     fl.UntilIdle,
		MaxDuration:   fl.MaxDuration,
		MaxSites:      fl.MaxSites,
		SitesInFlight: fl.SitesInFlight,
		MaxConns:      fl.MaxConns,
		IdleRecheck:   fl.Recheck,
		Logger:        a.logger,
	}
	form, err := webbotauth.ParseAgentForm(fl.AgentForm)
	if err != nil {
		return o, usagef("--signature-agent-form: %v", err)
	}
	if u, err := url.Parse(fl.AgentURL); err != nil || u.Scheme != "https" || u.Host == "" {
		return o, usagef("--signature-agent %q: want an https URL such as %s", fl.AgentURL, webbotauth.DefaultAgentURL)
	}
	o.SignatureAgentURL, o.SignatureAgentForm = fl.AgentURL, form
	if fl.SitesInFlight < 0 || fl.MaxConns < 0 {
		return o, usagef("--max-sites-in-flight %d, --max-conns %d: want a count (0: the default)",
			fl.SitesInFlight, fl.MaxConns)
	}
	policy, err := fl.Policy.policy()
	if err != nil {
		return o, err
	}
	o.Tiers, o.MinInDomains = policy.Tiers, policy.MinInDomains
	if fl.NameCache < -1 {
		return o, usagef("--name-cache must be a number of names, or -1 for none")
	}
	if fl.MinDelay < 0 || fl.IPDelay < 0 || fl.MaxDuration < 0 || fl.MaxSites < 0 || fl.Recheck < 0 {
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
	asnDB := fl.ASNDB
	if asnDB == "" {
		// On by default where it can be: a table the operator dropped into
		// the data directory (README, "Network operators").
		if p := filepath.Join(a.DataDir, defaultASNFile); fileExists(p) {
			asnDB = p
		}
	}
	if asnDB != "" {
		db, err := crawl.LoadASN(asnDB)
		if err != nil {
			return o, err
		}
		o.ASN = db
		o.ASNSource = asnDB
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

// nameCache turns --name-cache into graph.Options.NameCache, where 0 would
// mean the default: on the command line 0 and -1 both mean no cache.
func nameCache(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// defaultASNFile is the ip2asn table a crawl uses without --asn-db when it
// is in the data directory (iptoasn.com's name for it).
const defaultASNFile = "ip2asn-combined.tsv.gz"

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// platformSuffixes are the suffixes of a crawl's platform table (nil: the
// default table's): what a new store routes by.
func platformSuffixes(ps []crawl.Platform) []string {
	if ps == nil {
		ps = crawl.DefaultPlatforms
	}
	out := []string{}
	for _, p := range ps {
		out = append(out, p.Suffix)
	}
	return out
}

// logCrawlStart is the crawl's first line: the settings in force, so that a
// log file says what a run was doing and as whom.
func logCrawlStart(log *slog.Logger, dataDir string, o crawl.Options, store *shard.Store) {
	if store.Shards() > 1 {
		want, have := shard.MustRouter(store.Shards(), platformSuffixes(o.Platforms)).Platforms(), store.Router().Platforms()
		if !slices.Equal(want, have) {
			// Pace is shared across shards in one process; only a fleet,
			// where shards live on different machines, needs a platform's
			// sites in one shard.
			log.Warn("the store routes domains to shards by other platforms than this crawl paces: a platform the store does not know may span shards "+
				"(harmless on one machine; `store reshard --platform` changes the store's)", "store_platforms", have, "crawl_platforms", want)
		}
	}
	operators := "off: no ip2asn table (README, \"Network operators\")"
	if o.ASN != nil {
		operators = "recorded from " + o.ASNSource
	}
	minDelay := o.MinDelay
	if minDelay == 0 && !o.MinDelaySet {
		minDelay = crawl.DefaultMinDelay
	}
	log.Info("crawl starting", "version", buildinfo.Get().Version, "data_dir", dataDir, "shards", store.Shards(),
		"user_agent", o.UserAgent, "robots_token", o.RobotsToken, "from", o.From, "signature_agent", o.SignatureAgentURL,
		"min_delay", minDelay.String(), "ip_delay", o.IPDelay.String(), "sites_in_flight", o.SitesInFlight,
		"max_conns", o.MaxConns, "max_sites", o.MaxSites, "max_duration", o.MaxDuration.String(),
		"until_idle", o.UntilIdle, "connect_to_rules", len(o.ConnectTo), "network_operators", operators,
		"tiers", o.Tiers.String(), "min_in_domains", o.MinInDomains)
}
