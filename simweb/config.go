package simweb

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
)

// Config describes a web. The zero value is a small web of 20 generated
// sites plus the named special sites.
type Config struct {
	// Seed makes the web: the same seed and settings give the same sites,
	// pages, links and expectations.
	Seed uint64
	// Sites is the number of generated sites (s00000.example ...), besides
	// the named special ones. 0 means 20; negative means none.
	Sites int
	// Pages is the number of inner pages of a normal site (0 means 5). The
	// home page, these and one feed must fit in the 8 pages of a first
	// visit for ExpectedEdges to hold, so keep it at 6 or below.
	Pages int
	// SpecialShare is the share (0..1) of generated sites given a special
	// kind drawn from SpecialKinds (nil: DefaultSpecialKinds).
	SpecialShare float64
	SpecialKinds []Kind
	// Skip leaves out the named special sites of these kinds (for example
	// KindRobotsHang, KindSlow and KindCrawlDelay for a quick run).
	Skip []Kind
	// Platform is the shared platform of the three KindPlatform sites
	// (alice.PLATFORM, bob.PLATFORM, carol.PLATFORM). It must be a suffix of
	// the Public Suffix List's private section, so that each of them is a
	// registrable domain of its own (empty: "github.io"). neocities.org,
	// DESIGN.md's example, is not: the list shipped with golang.org/x/net
	// v0.63.0 makes alice.neocities.org a host of neocities.org.
	Platform string
	// NoNamed leaves out every named special site.
	NoNamed bool
	// SlowDelay is how long KindSlow sites wait before each answer
	// (0 means 200ms).
	SlowDelay time.Duration
	// Clock stamps the request log and Retry-After dates (nil: time.Now).
	Clock func() time.Time
	// Dir is where the CA certificate file is written (empty: a temporary
	// directory removed by Close).
	Dir string
	// Logger receives the servers' own errors (nil: discarded).
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Sites == 0 {
		c.Sites = 20
	}
	if c.Sites < 0 {
		c.Sites = 0
	}
	if c.Sites > 999_999 {
		return c, fmt.Errorf("simweb: %d sites is more than the naming scheme holds (999999)", c.Sites)
	}
	if c.Pages == 0 {
		c.Pages = 5
	}
	if c.Pages < 0 || c.Pages > 100 {
		return c, fmt.Errorf("simweb: pages per site %d out of range 1..100", c.Pages)
	}
	if c.SpecialShare < 0 || c.SpecialShare > 1 {
		return c, errors.New("simweb: SpecialShare must be within 0..1")
	}
	if c.SpecialKinds == nil {
		c.SpecialKinds = DefaultSpecialKinds
	}
	for _, k := range append(append([]Kind(nil), c.SpecialKinds...), c.Skip...) {
		if _, ok := kinds[k]; !ok {
			return c, fmt.Errorf("simweb: unknown kind %q", k)
		}
	}
	if c.SpecialShare > 0 && len(c.SpecialKinds) == 0 {
		return c, errors.New("simweb: SpecialShare without SpecialKinds")
	}
	if c.Platform == "" {
		c.Platform = "github.io"
	}
	c.Platform = strings.ToLower(strings.Trim(c.Platform, "."))
	if c.SlowDelay == 0 {
		c.SlowDelay = 200 * time.Millisecond
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
