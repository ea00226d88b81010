package removal

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/domain"
)

// Timeouts of proof fetches: the crawler's (DESIGN.md, "Timeouts").
const (
	ConnectTimeout  = 10 * time.Second
	ResponseTimeout = 30 * time.Second
	maxRedirects    = 5
)

// DialFunc dials a connection (net.Dialer.DialContext, or a test's dialer
// that points a domain at loopback).
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// NewTransport is the bottom of the proof fetch path: connect timeout, no
// proxy, no keep-alive pool to speak of. nil dial: the crawler's dialer, so
// that a proof fetch, like a crawl, connects only to public addresses on
// ports browsers allow (fetch's address guard).
func NewTransport(dial DialFunc) *http.Transport {
	if dial == nil {
		dial = fetch.NewDialer(nil, nil, ConnectTimeout, 0).DialContext
	}
	return &http.Transport{
		DialContext:           dial,
		TLSHandshakeTimeout:   ConnectTimeout,
		ResponseHeaderTimeout: ResponseTimeout,
		MaxIdleConnsPerHost:   1,
		IdleConnTimeout:       time.Second,
	}
}

// NewHTTPClient wraps rt (the signing layer over NewTransport, in the
// command) with a whole-response timeout and a redirect policy: at most 5
// hops, all within the domain being verified, so a proof can only come from
// the domain's own servers (http to https, example.com to www.example.com).
func NewHTTPClient(rt http.RoundTripper) *http.Client {
	return &http.Client{
		Transport: rt,
		Timeout:   ResponseTimeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("more than %d redirects", maxRedirects)
			}
			from, err1 := domain.Normalize(via[0].URL.Hostname())
			to, err2 := domain.Normalize(req.URL.Hostname())
			if err1 != nil || err2 != nil || from != to {
				return fmt.Errorf("redirect to another domain (%s)", req.URL.Hostname())
			}
			return nil
		},
	}
}

// shortError says what went wrong without the URL net/http wraps around it.
func shortError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &ne) && ne.Timeout():
		return errors.New("timeout")
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return errors.New("no such host")
		}
		return errors.New("DNS error")
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) && opErr.Op == "dial" {
		return fmt.Errorf("cannot connect: %v", opErr.Err)
	}
	return err
}
