package crawl

import (
	"context"
	"errors"
	"net/url"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/pace"
	"github.com/mapthenet/mapthenet/crawl/page"
	"github.com/mapthenet/mapthenet/graph"
)

// Crawler visits domains: the fetch layers (client, signer, pace, robots
// gate, response classifier) put together. Visit is safe to call from many
// goroutines, for different domains at once.
type Crawler struct {
	opts   Options
	pacer  *pace.Pacer
	dialer *fetch.Dialer
	fetch  *fetch.Config
	reader *page.Reader
	// normalize maps a host to its registrable domain (graph.Normalize).
	normalize func(string) (string, error)
}

// ErrAbandoned: the crawl is stopping; the visit was dropped, not recorded.
var ErrAbandoned = errors.New("crawl: visit abandoned")

// NewCrawler sets the fetch path up.
func NewCrawler(opts Options) (*Crawler, error) {
	o := opts.withDefaults()
	if err := o.checkIdentity(); err != nil {
		return nil, err
	}
	d := fetch.NewDialer(o.Resolver, o.ConnectTo, o.ConnectTimeout, o.MaxConns)
	cfg := &fetch.Config{
		Dialer:          d,
		UserAgent:       o.UserAgent,
		ResponseTimeout: o.ResponseTimeout,
		MaxBody:         o.MaxBody,
		Sign:            o.Sign,
		Header:          o.identityHeader(),
	}
	if o.CACertFile != "" {
		pool, err := fetch.RootsWithCA(o.CACertFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	return &Crawler{
		opts:      o,
		pacer:     pace.New(o.Clock),
		dialer:    d,
		fetch:     cfg,
		reader:    &page.Reader{Token: o.RobotsToken, MaxBytes: int(o.MaxBody)},
		normalize: graph.Normalize,
	}, nil
}

// siteOf is the registrable domain of a URL's host; "" when it has none.
func (c *Crawler) siteOf(u *url.URL) string {
	d, err := c.normalize(u.Hostname())
	if err != nil {
		return ""
	}
	return d
}

// facts fills in IPv6 and the network operator from the domain's addresses.
func (v *visit) facts(ctx context.Context, host string) {
	ips, _, err := v.c.dialer.Resolve(ctx, host, "443")
	if err != nil || len(ips) == 0 {
		return
	}
	v6 := false
	for _, ip := range ips {
		if ip.To4() == nil {
			v6 = true
		}
	}
	v.res.IPv6 = &v6
	if v.c.opts.ASN != nil {
		for _, ip := range ips {
			if asn, name, ok := v.c.opts.ASN.Lookup(ip); ok {
				v.res.ASN, v.res.NetworkOperator = asn, name
				break
			}
		}
	}
}
