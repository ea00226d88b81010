package fetch

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"sync"
	"time"
)

// Resolver looks host names up. *net.Resolver is one; tests give a map.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Dialer opens the crawler's TCP connections: --connect-to rules first,
// then the Resolver, the address guard (guard.go) on every address it is
// about to dial, a connect timeout, and a cap on connections open at once
// across the whole crawl (a connection holds its place until closed).
type Dialer struct {
	Resolver  Resolver
	ConnectTo []ConnectTo
	// Timeout bounds one connection attempt (DESIGN.md: 10 s).
	Timeout time.Duration
	sem     chan struct{}
	// dial is net.Dialer.DialContext. In-package tests replace it to
	// send what the guard let through to a loopback canary: the guard runs
	// before it, always.
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
// It does not apply the guard: it serves facts (IPv6, network operator) and
// pacing, which open no connection.
func (d *Dialer) Resolve(ctx context.Context, host, port string) ([]net.IP, string, error) {
	h, p, _ := match(d.ConnectTo, host, port)
	ips, err := d.lookup(ctx, h)
	return ips, p, err
}

func (d *Dialer) lookup(ctx context.Context, h string) ([]net.IP, error) {
	if ip := net.ParseIP(h); ip != nil {
		return []net.IP{ip}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, d.Timeout)
	defer cancel()
	addrs, err := d.Resolver.LookupIPAddr(ctx, h)
	if err != nil {
		var dnsErr *net.DNSError
		if !errors.As(err, &dnsErr) && ctx.Err() == nil {
			err = &net.DNSError{Err: err.Error(), Name: h}
		}
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: h, IsNotFound: true}
	}
	ips := make([]net.IP, len(addrs))
	for i, a := range addrs {
		ips[i] = a.IP
	}
	return ips, nil
}

// DialContext is for http.Transport.
func (d *Dialer) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	h, p, operator := match(d.ConnectTo, host, port)
	if !operator && !PortAllowed(p) {
		return nil, errBadPort
	}
	if a, err := netip.ParseAddr(h); err == nil && a.Zone() != "" && !operator {
		return nil, errNotPublic // a scoped address: never public
	}
	ips, err := d.lookup(ctx, h)
	if err != nil {
		return nil, err
	}
	if !operator {
		// The guard, on the very addresses dialled below: a name that
		// resolves to an internal address now is refused now, whatever it
		// resolved to before (DNS rebinding).
		ips = slices.DeleteFunc(ips, func(ip net.IP) bool { return !publicIP(ip) })
		if len(ips) == 0 {
			return nil, errNotPublic
		}
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
