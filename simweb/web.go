package simweb

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Web is a running (or ready to run) simulated web.
type Web struct {
	cfg    Config
	world  *world
	ca     *authority // the one the crawler trusts
	rogue  *authority // signs KindBadCert hosts' certificates
	dir    string
	ownDir bool
	log    requestLog

	expectOnce sync.Once
	expected   []Edge

	mu      sync.Mutex
	started bool
	closed  bool
	ln      *sniffListener
	srv     *http.Server
	done    chan struct{} // closed by Close: hanging handlers return
	serveWG sync.WaitGroup
	connsWG sync.WaitGroup
	conns   map[net.Conn]struct{}
}

// New builds the web described by cfg (sites, pages, certificates) and
// writes the CA certificate file. Start serves it.
func New(cfg Config) (*Web, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	wld, err := buildWorld(cfg)
	if err != nil {
		return nil, err
	}
	ca, err := newAuthority("simweb CA")
	if err != nil {
		return nil, err
	}
	rogue, err := newAuthority("simweb rogue CA")
	if err != nil {
		return nil, err
	}
	w := &Web{cfg: cfg, world: wld, ca: ca, rogue: rogue, dir: cfg.Dir, done: make(chan struct{}),
		conns: map[net.Conn]struct{}{}}
	if w.dir == "" {
		if w.dir, err = os.MkdirTemp("", "simweb-"); err != nil {
			return nil, fmt.Errorf("simweb: %w", err)
		}
		w.ownDir = true
	}
	if err := os.WriteFile(w.CAFile(), ca.pem, 0o644); err != nil {
		w.removeDir()
		return nil, fmt.Errorf("simweb: writing the CA certificate: %w", err)
	}
	return w, nil
}

// Start listens on 127.0.0.1 (a free port) and serves HTTP and HTTPS there.
func (w *Web) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || w.closed {
		return errors.New("simweb: Start called twice or after Close")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("simweb: %w", err)
	}
	w.ln = newSniffListener(l, w.tlsConfig(), w.cfg.Clock)
	w.srv = &http.Server{
		Handler:           w,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          slog.NewLogLogger(w.cfg.Logger.Handler(), slog.LevelDebug),
		ConnState:         w.connState,
		ConnContext:       connContext,
	}
	w.started = true
	w.serveWG.Add(1)
	go func() {
		defer w.serveWG.Done()
		_ = w.srv.Serve(w.ln) // returns ErrServerClosed on Close
	}()
	return nil
}

// connState tracks the server's connections so that Close can wait for
// every connection goroutine.
func (w *Web) connState(c net.Conn, s http.ConnState) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch s {
	case http.StateNew:
		w.conns[c] = struct{}{}
		w.connsWG.Add(1)
	case http.StateClosed, http.StateHijacked:
		if _, ok := w.conns[c]; ok {
			delete(w.conns, c)
			w.connsWG.Done()
		}
	}
}

// Close stops serving, closes every connection, waits for every goroutine
// the web started and removes its temporary directory.
func (w *Web) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	close(w.done)
	started := w.started
	w.mu.Unlock()
	if started {
		_ = w.srv.Close()
		w.serveWG.Wait()
		w.mu.Lock()
		for c := range w.conns { // handed over while the server was closing
			c.Close()
		}
		w.mu.Unlock()
		w.connsWG.Wait()
	}
	return w.removeDir()
}

func (w *Web) removeDir() error {
	if w.ownDir {
		return os.RemoveAll(w.dir)
	}
	return nil
}

// Addr is the listener's address, "127.0.0.1:PORT" (empty before Start).
func (w *Web) Addr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ln == nil {
		return ""
	}
	return w.ln.Addr().String()
}

// ConnectTo is the crawler's --connect-to value that sends every host and
// port to this web: "::127.0.0.1:PORT".
func (w *Web) ConnectTo() string {
	_, port, _ := net.SplitHostPort(w.Addr())
	return "::127.0.0.1:" + port
}

// CAFile is the path of the CA certificate (PEM) for the crawler's --ca-cert.
func (w *Web) CAFile() string { return filepath.Join(w.dir, "simweb-ca.pem") }

// CAPEM is the CA certificate in PEM.
func (w *Web) CAPEM() []byte { return slices.Clone(w.ca.pem) }

// CertPool holds the CA certificate.
func (w *Web) CertPool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(w.ca.cert)
	return p
}

// Transport is an HTTP transport that reaches every host through this web
// and trusts its CA: for tests of the web itself. Close its idle
// connections when done.
func (w *Web) Transport() *http.Transport {
	addr := w.Addr()
	return &http.Transport{
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
		TLSClientConfig:     &tls.Config{RootCAs: w.CertPool()},
		DisableCompression:  false,
		MaxIdleConnsPerHost: 4,
	}
}

// Sites lists every site, generated ones first, in a fixed order.
func (w *Web) Sites() []Site {
	out := make([]Site, len(w.world.sites))
	for i, s := range w.world.sites {
		out[i] = s.Site
		out[i].Hosts = slices.Clone(s.Hosts)
	}
	return out
}

// Site returns the site with that registrable domain.
func (w *Web) Site(domain string) (Site, bool) {
	s := w.world.byName[strings.ToLower(domain)]
	if s == nil {
		return Site{}, false
	}
	out := s.Site
	out.Hosts = slices.Clone(s.Hosts)
	return out, true
}

// SiteOf returns the registrable domain of a host of this web ("" if none).
func (w *Web) SiteOf(host string) string {
	if h := w.world.byHost[strings.ToLower(host)]; h != nil {
		return h.site.Domain
	}
	return ""
}

// Seeds lists every site's home page URL, one per site.
func (w *Web) Seeds() []string {
	out := make([]string, len(w.world.sites))
	for i, s := range w.world.sites {
		out[i] = s.Home
	}
	return out
}

// WriteSeeds writes Seeds to path in the crawler's --seeds format.
func (w *Web) WriteSeeds(path string) error {
	var b strings.Builder
	b.WriteString("# simweb seed " + strconv.FormatUint(w.cfg.Seed, 10) + "\n")
	for _, s := range w.Seeds() {
		b.WriteString(s + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// Requests returns every request since Start or the last Reset, ordered by
// start time.
func (w *Web) Requests() []Request { return w.log.snapshot() }

// Reset empties the request log (between two crawls of one test).
func (w *Web) Reset() { w.log.reset() }
