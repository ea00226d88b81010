// Package fetch is the crawler's HTTP layer: a dialer honouring
// --connect-to, the address guard (public unicast addresses only, no bad
// ports) and a connection cap, an http.Transport with the connect and
// response timeouts, request signing, capped body reads, and errors sorted
// into the few kinds a visit's outcome needs. It never follows redirects:
// the visit does, so that every hop is paced, checked against robots.txt and
// counted.
package fetch

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// Config is shared by every visit of a crawl.
type Config struct {
	Dialer *Dialer
	// RootCAs: nil means the system roots.
	RootCAs   *x509.CertPool
	UserAgent string
	// Header is sent with every request besides User-Agent (the operator's
	// From, X-Crawler-Info); nil: none.
	Header http.Header
	// ResponseTimeout bounds a whole request: connect, headers and body
	// (DESIGN.md: 30 s).
	ResponseTimeout time.Duration
	// MaxBody caps the decoded bytes read from one response (1024 KB).
	MaxBody int64
	// Sign adds the request signature headers; nil: unsigned.
	Sign func(*http.Request) error
}

// RootsWithCA returns the system roots plus the PEM certificates in file.
func RootsWithCA(file string) (*x509.CertPool, error) {
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("--ca-cert: %w", err)
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--ca-cert %s: no PEM certificate in it", file)
	}
	return pool, nil
}

// Client makes the requests of one visit. Its connections are its own:
// Close frees them all when the visit ends, so an idle connection never
// outlives its site's visit and the dialer's cap stays honest.
type Client struct {
	cfg *Config
	tr  *http.Transport
	hc  *http.Client
}

// NewClient returns a client for one visit.
func (cfg *Config) NewClient() *Client {
	tr := &http.Transport{
		// No proxy, whatever the environment says (http.DefaultTransport
		// would read HTTP_PROXY): a proxy would dial for us, past the
		// address guard.
		Proxy:       nil,
		DialContext: cfg.Dialer.DialContext,
		TLSClientConfig: &tls.Config{
			RootCAs:    cfg.RootCAs,
			MinVersion: tls.VersionTLS12,
			// Classic key exchange only: the post-quantum hybrid's key
			// generation was a tenth of the crawl's CPU per page in the
			// benchmark, and public pages need no long-term secrecy.
			CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
		},
		TLSHandshakeTimeout:   cfg.Dialer.Timeout,
		MaxIdleConnsPerHost:   1,
		MaxConnsPerHost:       1, // one request at a time per site anyway
		IdleConnTimeout:       30 * time.Second,
		ResponseHeaderTimeout: cfg.ResponseTimeout,
	}
	hc := &http.Client{
		Transport: tr,
		// No cookies: Jar stays nil. No redirects: the visit follows them.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return &Client{cfg: cfg, tr: tr, hc: hc}
}

// Close drops the visit's connections.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// Response is what one request gave.
type Response struct {
	Status   int
	Header   http.Header
	Body     []byte // decoded, capped; nil when dropped or given to a Sink
	Bytes    int64  // decoded bytes read, whether kept in Body or streamed
	Location string // the Location header of a 3xx, as sent
	// Dropped: the body was not read (accept said no at the headers).
	Dropped bool
	// Truncated: the body was longer than the cap; what was read is used.
	Truncated bool
	TLS       bool // the connection was HTTPS with a verified certificate
}

// Accept decides at the headers whether a body is worth reading.
type Accept func(status int, h http.Header) bool

// Sink reads a 2xx body as it streams in (at most MaxBody bytes), so that
// a crawl of thousands of sites at once never holds their pages in memory.
type Sink func(status int, h http.Header, body io.Reader)

// ErrorBodyMax caps what is kept of an error response's body: enough for a
// bot-protection page's markers.
const ErrorBodyMax = 64 * 1024

// Get requests url. A body accept (nil: always) takes is streamed to sink
// when the status is 2xx and sink is not nil, else kept in Body (error
// statuses: at most ErrorBodyMax). Errors are *Error; a body that breaks
// off returns the Response with what was read and the error.
func (c *Client) Get(ctx context.Context, url string, accept Accept, sink Sink) (*Response, error) {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.ResponseTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, &Error{Kind: KindBadURL, Err: err}
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	for k, v := range c.cfg.Header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/rss+xml,application/atom+xml,application/feed+json;q=0.9,*/*;q=0.1")
	if c.cfg.Sign != nil {
		if err := c.cfg.Sign(req); err != nil {
			return nil, &Error{Kind: KindSign, Err: err}
		}
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, classify(ctx, err)
	}
	defer resp.Body.Close()
	r := &Response{
		Status:   resp.StatusCode,
		Header:   resp.Header,
		Location: resp.Header.Get("Location"),
		TLS:      resp.TLS != nil,
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 || (accept != nil && !accept(resp.StatusCode, resp.Header)) {
		r.Dropped = true
		return r, nil
	}
	limit := c.cfg.MaxBody
	if resp.StatusCode >= 400 {
		limit = min(limit, ErrorBodyMax)
	}
	cr := &cappedReader{r: resp.Body, left: limit}
	if sink != nil && resp.StatusCode >= 200 && resp.StatusCode < 300 {
		sink(resp.StatusCode, resp.Header, cr)
	} else {
		r.Body, _ = io.ReadAll(cr)
	}
	r.Bytes, r.Truncated = cr.n, cr.more
	if cr.err != nil {
		// What was read is used; the error still tells the visit to stop.
		return r, classify(ctx, cr.err)
	}
	return r, nil
}

// cappedReader stops at left bytes, noting whether the body had more, and
// keeps the first read error other than EOF (a reader of the body may not
// pass it on).
type cappedReader struct {
	r    io.Reader
	left int64
	n    int64
	more bool
	err  error
}

func (c *cappedReader) Read(p []byte) (int, error) {
	if c.left <= 0 {
		if !c.more && c.err == nil {
			var one [1]byte
			if n, _ := io.ReadFull(c.r, one[:]); n > 0 {
				c.more = true
			}
		}
		return 0, io.EOF
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	c.left -= int64(n)
	if err != nil && err != io.EOF && c.err == nil {
		c.err = err
	}
	return n, err
}

// Kind sorts request failures into what a visit's outcome needs.
type Kind int

const (
	KindOther Kind = iota
	KindDNS
	KindConnect // refused, unreachable, reset; or refused by the address guard
	KindTLS     // handshake or certificate failure
	KindTimeout
	KindCanceled // the crawl is stopping
	KindBadURL
	KindSign
)

// Error is a failed request. Its Short text has no URL or IP address in it.
type Error struct {
	Kind Kind
	Err  error
}

func (e *Error) Error() string { return e.Short() + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Refused reports whether the address guard refused the request (no
// public address, or a bad port): nothing was dialled.
func (e *Error) Refused() bool {
	var ge *GuardError
	return errors.As(e.Err, &ge)
}

// Short is a reason fit for visits.error: never a URL or an address.
func (e *Error) Short() string {
	switch e.Kind {
	case KindDNS:
		var d *net.DNSError
		if errors.As(e.Err, &d) && d.IsNotFound {
			return "dns: no such host"
		}
		return "dns: lookup failed"
	case KindConnect:
		var ge *GuardError
		if errors.As(e.Err, &ge) {
			return ge.Reason
		}
		msg := strings.ToLower(e.Err.Error())
		switch {
		case strings.Contains(msg, "refused"):
			return "connection refused"
		case strings.Contains(msg, "timeout"):
			return "connect timeout"
		case strings.Contains(msg, "reset"):
			return "connection reset"
		case strings.Contains(msg, "unreachable"):
			return "network unreachable"
		case strings.Contains(msg, "eof"):
			return "connection closed"
		}
		return "connection failed"
	case KindTLS:
		var ce *tls.CertificateVerificationError
		if errors.As(e.Err, &ce) {
			return "tls: certificate not valid"
		}
		return "tls: handshake failed"
	case KindTimeout:
		return "timeout"
	case KindCanceled:
		return "canceled"
	case KindBadURL:
		return "bad url"
	case KindSign:
		return "signing failed"
	}
	return "request failed"
}

func classify(ctx context.Context, err error) *Error {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var x509Unknown x509.UnknownAuthorityError
	var x509Host x509.HostnameError
	var x509Invalid x509.CertificateInvalidError
	var netErr net.Error
	var dialErr *net.OpError
	var guardErr *GuardError
	switch {
	case ctx.Err() == context.Canceled:
		return &Error{Kind: KindCanceled, Err: err}
	case errors.As(err, &guardErr):
		// Refused by the address guard: to the visit, a host it cannot
		// connect to (the next scheme or host may be public).
		return &Error{Kind: KindConnect, Err: err}
	case errors.As(err, &dialErr) && dialErr.Op == "dial" && dialErr.Timeout():
		// Nothing answered the connection: a connect failure (the next
		// scheme or host may answer), not a slow server.
		return &Error{Kind: KindConnect, Err: err}
	case errors.As(err, &dnsErr) && !dnsErr.IsTimeout:
		return &Error{Kind: KindDNS, Err: err}
	case errors.As(err, &certErr), errors.As(err, &recErr), errors.As(err, &alert),
		errors.As(err, &x509Unknown), errors.As(err, &x509Host), errors.As(err, &x509Invalid),
		strings.Contains(err.Error(), "tls: "), strings.Contains(err.Error(), "HTTP response to HTTPS client"):
		return &Error{Kind: KindTLS, Err: err}
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return &Error{Kind: KindTimeout, Err: err}
	case errors.As(err, &dnsErr):
		return &Error{Kind: KindTimeout, Err: err}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &Error{Kind: KindConnect, Err: err}
	}
	return &Error{Kind: KindOther, Err: err}
}
