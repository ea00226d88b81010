package fetch

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// Resolver looks host names up. *net.Resolver is one; tests give a map.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Dialer opens the crawler's TCP connections: --connect-to rules first,
// then the Resolver, a connect timeout, and a cap on connections open at
// once across the whole crawl (a connection holds its place until closed).
type Dialer struct {
	Resolver  Resolver
	ConnectTo []ConnectTo
	// Timeout bounds one connection attempt (DESIGN.md: 10 s).
	Timeout time.Duration
	sem     chan struct{}
	// dial is net.Dialer.DialContext; tests may replace it.
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// NewDialer returns a Dialer allowing at most maxConns open connections
// (0: no cap). A nil resolver means net.DefaultResolver.
func NewDialer(r Resolver, rules []ConnectTo, timeout time.Duration, maxConns int) *Dialer {
	if r == nil {
		r = net.DefaultResolver
	}
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	d := &Dialer{Resolver: r, ConnectTo: rules, Timeout: timeout}
	if maxConns > 0 {
		d.sem = make(chan struct{}, maxConns)
	}
	nd := &net.Dialer{KeepAlive: 30 * time.Second}
	d.dial = nd.DialContext
	return d
}

// Resolve returns the addresses a connection to host:port would try, after
// --connect-to (a rule pointing at an address makes DNS unnecessary, as in curl).
func (d *Dialer) Resolve(ctx context.Context, host, port string) ([]net.IP, string, error) {
	h, p := apply(d.ConnectTo, host, port)
	if ip := net.ParseIP(h); ip != nil {
		return []net.IP{ip}, p, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	addrs, err := d.Resolver.LookupIPAddr(ctx, h)
	if err != nil {
		var dnsErr *net.DNSError
		if !errors.As(err, &dnsErr) && ctx.Err() == nil {
			err = &net.DNSError{Err: err.Error(), Name: h}
		}
		return nil, p, err
	}
	if len(addrs) == 0 {
		return nil, p, &net.DNSError{Err: "no addresses", Name: h, IsNotFound: true}
	}
	ips := make([]net.IP, len(addrs))
	for i, a := range addrs {
		ips[i] = a.IP
	}
	return ips, p, nil
}

// DialContext is for http.Transport.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	ips, p, err := d.Resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	if d.sem != nil {
		select {
		case d.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	var firstErr error
	for _, ip := range ips {
		c, err := d.dial(ctx, network, joinHostPort(ip.String(), p))
		if err == nil {
			if d.sem == nil {
				return c, nil
			}
			return &cappedConn{Conn: c, release: d.release}, nil
		}
		if firstErr == nil {
			firstErr = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if d.sem != nil {
		d.release()
	}
	return nil, firstErr
}

func (d *Dialer) release() { <-d.sem }

// cappedConn gives its place back once, when closed.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
