package crawl

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/pace"
	"github.com/mapthenet/mapthenet/crawl/page"
	"github.com/mapthenet/mapthenet/domain"
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
	// normalize maps a host to its registrable domain (domain.Normalize).
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
		normalize: domain.Normalize,
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

// paceKeys are the paces a request to u must respect: the visited site's,
// its platform's, and, with --ip-delay, the server address's.
func (v *visit) paceKeys(ctx context.Context, u *url.URL) []pace.Key {
	keys := []pace.Key{{Name: "site:" + v.domain, Gap: v.siteGap()}}
	if other := v.c.siteOf(u); other != "" && other != v.domain {
		// A redirect hop to another site counts against that site too.
		keys = append(keys, pace.Key{Name: "site:" + other, Gap: v.c.opts.MinDelay})
	}
	if p, ok := v.c.opts.platformOf(v.domain); ok {
		keys = append(keys, pace.Key{Name: "platform:" + p.Suffix, Gap: p.Gap})
	}
	if v.c.opts.IPDelay > 0 {
		if ip := v.ipOf(ctx, u); ip != "" {
			keys = append(keys, pace.Key{Name: "ip:" + ip, Gap: v.c.opts.IPDelay})
		}
	}
	return keys
}

// ipOf is the first address a connection to u would try ("" if unknown).
func (v *visit) ipOf(ctx context.Context, u *url.URL) string {
	host := u.Hostname()
	if ip, ok := v.ips[host]; ok {
		return ip
	}
	port := u.Port()
	if port == "" {
		port = defaultPort(u.Scheme)
	}
	ips, _, err := v.c.dialer.Resolve(ctx, host, port)
	ip := ""
	if err == nil && len(ips) > 0 {
		ip = ips[0].String()
	}
	v.ips[host] = ip
	return ip
}

func defaultPort(scheme string) string {
	if scheme == "https" {
		return "443"
	}
	return "80"
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

var _ = net.IP(nil)
var _ = strconv.Itoa
