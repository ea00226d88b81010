package crawl

import (
	"cmp"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/schedule"
)

// Defaults (DESIGN.md, "Behaviour a site owner can see").
const (
	DefaultUserAgent       = "MapTheNetBot/1.0 (+https://www.mapthenet.org/bot)"
	DefaultRobotsToken     = "MapTheNetBot"
	DefaultMinDelay        = time.Second
	DefaultConnectTimeout  = 10 * time.Second
	DefaultResponseTimeout = 30 * time.Second
	DefaultMaxBody         = 1024 * 1024
	DefaultMaxRedirects    = 5
	DefaultSitesInFlight   = 1000
	DefaultMaxConns        = 2000
)

// Platform is a shared server: every registrable domain equal to or under
// Suffix shares one pace of one request per Gap (alice.neocities.org is its
// own registrable domain through the Public Suffix List's private section,
// yet all of them are one server to be kind to).
type Platform struct {
	Suffix string
	Gap    time.Duration
}

// DefaultPlatforms is the built-in platform table.
var DefaultPlatforms = []Platform{
	{Suffix: "neocities.org", Gap: 2 * time.Second},
}

// ParsePlatform reads SUFFIX=DURATION ("neocities.org=2s").
func ParsePlatform(s string) (Platform, error) {
	suffix, d, ok := strings.Cut(s, "=")
	gap, err := time.ParseDuration(d)
	if !ok || err != nil || gap <= 0 || suffix == "" {
		return Platform{}, fmt.Errorf("platform %q: want SUFFIX=DURATION, such as neocities.org=2s", s)
	}
	return Platform{Suffix: strings.ToLower(strings.Trim(suffix, ".")), Gap: gap}, nil
}

// Options configure a crawl. Zero values take the defaults above.
type Options struct {
	// What a site owner sees. The operator's identity (identity.go):
	// UserAgent, RobotsToken, From and SignatureAgentURL must all be set
	// unless every host is mapped with ConnectTo (then the built-in
	// identity fills the gaps, without a From).
	UserAgent   string
	RobotsToken string
	From        string        // the operator's e-mail address, sent as From
	CrawlerInfo bool          // also send X-Crawler-Info: the bot page (the URL in UserAgent)
	MinDelay    time.Duration // least gap between request starts per site; 0 with MinDelaySet: none (tests, benchmarks)
	MinDelaySet bool          // MinDelay was given explicitly (0 allowed)
	IPDelay     time.Duration // >0: all sites on one IP address share a pace
	Platforms   []Platform    // nil: DefaultPlatforms

	// Network.
	ConnectTo       []fetch.ConnectTo
	CACertFile      string
	Resolver        fetch.Resolver // nil: the system resolver
	ConnectTimeout  time.Duration
	ResponseTimeout time.Duration
	MaxBody         int64
	MaxRedirects    int
	MaxConns        int // open connections at once, whole crawl
	// Sign signs each request (Web Bot Auth). Run loads or creates the key
	// in KeysDir when Sign is nil and KeysDir is set.
	Sign    func(*http.Request) error
	KeysDir string
	// How the signature names our key directory (Signature-Agent); the
	// zero values are the notes' section 9 defaults.
	SignatureAgentURL  string
	SignatureAgentForm webbotauth.AgentForm

	// ASN maps addresses to network operators; nil: unknown.
	ASN       *ASNDB
	ASNSource string // the file ASN came from, for the start-up log line

	// The loop.
	DataDir          string   // where rebuilds/current/schedule.parquet is read
	Seeds            []string // seed files
	Exclude          []string // files of domains never crawled
	UntilIdle        bool
	MaxDuration      time.Duration
	MaxSites         int            // visits to start at most; 0: no limit
	MinInDomains     int            // the discovery threshold: a domain found in this run is visited once this many of the run's visited domains link to it (0: schedule.DefaultMinInDomains)
	MaxFound         int            // domains found in this run kept in line for it (0: DefaultMaxFound); the rest wait for the next schedule
	MaxDue           int            // due schedule rows held at once (0: DefaultMaxDue); the rest are read when these are taken
	SitesInFlight    int            // visits at once
	Tiers            schedule.Tiers // the revisit tier table: first visits read its lowest tier's pages (nil: schedule.DefaultTiers)
	Now              time.Time      // as-of time for what is due; zero: the clock
	IdleRecheck      time.Duration
	Progress         io.Writer // periodic counts; nil: none
	ProgressInterval time.Duration
	// LogEvery, when positive, writes a "crawl progress" log line at that
	// interval (cmd sets a minute when stderr is not a terminal); 0: none.
	LogEvery time.Duration

	// Fleet, when set, makes the crawl one node of a fleet (fleet.go):
	// only the open shards' domains are visited, every request asks the
	// fleet first, seeds are added by the node as it takes their shards,
	// and domains found by visits wait for the next rebuild.
	Fleet *Fleet

	Clock   clockwork.Clock
	Logger  *slog.Logger
	Metrics *Metrics // nil: none
}

func (o *Options) withDefaults() Options {
	x := *o
	if MapsEveryHost(x.ConnectTo) {
		// The built-in identity, only for a crawl that reaches no real host.
		x.UserAgent = cmp.Or(x.UserAgent, DefaultUserAgent)
		x.RobotsToken = cmp.Or(x.RobotsToken, DefaultRobotsToken)
		x.SignatureAgentURL = cmp.Or(x.SignatureAgentURL, webbotauth.DefaultAgentURL)
	}
	if x.MinDelay == 0 && !x.MinDelaySet {
		x.MinDelay = DefaultMinDelay
	}
	if x.Platforms == nil {
		x.Platforms = DefaultPlatforms
	}
	if x.ConnectTimeout <= 0 {
		x.ConnectTimeout = DefaultConnectTimeout
	}
	if x.ResponseTimeout <= 0 {
		x.ResponseTimeout = DefaultResponseTimeout
	}
	if x.MaxBody <= 0 {
		x.MaxBody = DefaultMaxBody
	}
	if x.MaxRedirects <= 0 {
		x.MaxRedirects = DefaultMaxRedirects
	}
	if x.MaxConns <= 0 {
		x.MaxConns = DefaultMaxConns
	}
	if x.SitesInFlight <= 0 {
		x.SitesInFlight = DefaultSitesInFlight
	}
	if x.Tiers == nil {
		x.Tiers = schedule.DefaultTiers
	}
	if x.MaxDue <= 0 {
		x.MaxDue = DefaultMaxDue
	}
	if x.IdleRecheck <= 0 {
		x.IdleRecheck = time.Minute
	}
	if x.ProgressInterval <= 0 {
		x.ProgressInterval = 5 * time.Second
	}
	if x.Clock == nil {
		x.Clock = clockwork.NewRealClock()
	}
	if x.Logger == nil {
		x.Logger = slog.New(slog.DiscardHandler)
	}
	return x
}

// platformOf returns the platform a domain belongs to, if any.
func (o *Options) platformOf(domain string) (Platform, bool) {
	for _, p := range o.Platforms {
		if domain == p.Suffix || strings.HasSuffix(domain, "."+p.Suffix) {
			return p, true
		}
	}
	return Platform{}, false
}
