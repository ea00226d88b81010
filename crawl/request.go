package crawl

import (
	"context"
	"errors"
	"net/url"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/pace"
)

// response is a fetch.Response whose body may have broken off (Err).
type response struct {
	*fetch.Response
	Err *fetch.Error
}

// get is one request of the visit, down the fetch path's lower layers: it
// waits its turn on every pace it must respect (crawl/pace, paceKeys), then
// the visit's client sends it (crawl/fetch: the address guard, the
// timeouts, the signer, capped bodies). sink (nil: none) reads a 2xx body
// as it streams in. A failed request is a *fetch.Error; a body that broke
// off is a response with Err set.
func (v *visit) get(ctx context.Context, u *url.URL, accept fetch.Accept, sink fetch.Sink) (*response, *fetch.Error) {
	release, err := v.c.pacer.Acquire(ctx, v.paceKeys(ctx, u)...)
	if err != nil {
		return nil, &fetch.Error{Kind: fetch.KindCanceled, Err: err}
	}
	defer release()
	f := v.c.opts.Fleet
	if f != nil {
		ip := ""
		if v.c.opts.IPDelay > 0 {
			ip = v.ipOf(ctx, u)
		}
		// Right before the request: a node past its lease deadline, or
		// no longer holding the shard, sends nothing more.
		if err := f.gateRequest(ctx, v, ip); err != nil {
			return nil, &fetch.Error{Kind: fetch.KindCanceled, Err: err}
		}
	}
	start := v.c.opts.Clock.Now()
	r, err := v.client.Get(ctx, u.String(), accept, sink)
	if f != nil {
		f.sent(v.domain, start, v.c.opts.Clock.Now(), v.siteGap())
	}
	var fe *fetch.Error
	if err != nil && !errors.As(err, &fe) {
		fe = &fetch.Error{Kind: fetch.KindOther, Err: err}
	}
	if r == nil {
		v.c.opts.Metrics.request(0, fe)
		return nil, fe
	}
	v.c.opts.Metrics.request(r.Status, fe)
	v.c.opts.Metrics.read(r.Bytes)
	v.res.Bytes += r.Bytes
	return &response{Response: r, Err: fe}, nil
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
