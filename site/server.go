package site

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mapthenet/mapthenet/crawl/removal"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/snapshot"
)

// Options configure a Server.
type Options struct {
	DataDir string
	Logger  *slog.Logger // nil: discard
	// Bot configures the bot page (/bot) and the key directory
	// (webbotauth.DirectoryPath): the operator's identity.
	Bot webbotauth.HandlerOptions
	// Contact is the operator's address, shown on the removal page.
	Contact string
	// RemovalSecret returns the secret removal tokens are made with
	// (removal.LoadOrCreateSecret of the keys directory); nil: the removal
	// page hands out no token.
	RemovalSecret func() ([]byte, error)
	// Checker looks for a domain's proofs; nil: the removal page offers no
	// check.
	Checker ProofChecker
	// Remove removes a domain whose proof held; nil: a proven request is
	// logged for the operator (mapthenet remove verify DOMAIN) and the owner
	// told so. Serving stays read-only unless the operator sets this.
	Remove func(ctx context.Context, res *removal.Result) error
	// Clock: nil means time.Now.
	Clock func() time.Time
	// map payload shape; zero: defaults.
	mapOptions
}

// ProofChecker checks a domain's removal proofs (*removal.Checker is one).
type ProofChecker interface {
	Check(ctx context.Context, domain, token string) *removal.Result
}

// Server serves one snapshot at a time, read-only: the map, the rankings,
// a page per domain, the JSON API, the bot page, the key directory and
// the removal page. Refresh swaps in a new snapshot when rebuilds/current
// moves; requests in flight finish on the one they started with.
type Server struct {
	opts    Options
	log     *slog.Logger
	cur     atomic.Pointer[Index]
	curErr  atomic.Pointer[string] // why the last load failed; nil when it did not
	loading sync.Mutex             // one load at a time
	mux     *http.ServeMux
	checks  *checkLimiter
}

// New makes a server and loads the current snapshot. A data directory
// without a snapshot yet is not an error: the pages say so (503) until
// Refresh finds one.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	opts.mapOptions = opts.mapOptions.withDefaults()
	if opts.Bot.Logger == nil {
		opts.Bot.Logger = opts.Logger
	}
	if opts.Bot.Keys == nil {
		opts.Bot.Keys = func() (*webbotauth.Keyring, error) { return nil, errors.New("no signing keys configured") }
	}
	if opts.Bot.RemovalPage == "" {
		opts.Bot.RemovalPage = "/remove"
	}
	s := &Server{opts: opts, log: opts.Logger, checks: newCheckLimiter(opts.Clock)}
	s.routes()
	if _, err := s.Refresh(); err != nil && !errors.Is(err, snapshot.ErrNoSnapshot) {
		return nil, err
	}
	return s, nil
}

// Snapshot is the id of the snapshot being served ("" when none).
func (s *Server) Snapshot() string {
	if ix := s.cur.Load(); ix != nil {
		return ix.ID
	}
	return ""
}

// Refresh loads the snapshot rebuilds/current names when it is not the one
// being served, and swaps it in whole; it reports whether it did. A
// snapshot that fails to load leaves the old one serving (and the error is
// returned, and logged once per snapshot id).
func (s *Server) Refresh() (bool, error) {
	s.loading.Lock()
	defer s.loading.Unlock()
	id, err := currentID(s.opts.DataDir)
	if err != nil {
		return false, err
	}
	if id == "" {
		return false, fmt.Errorf("%w (%s)", snapshot.ErrNoSnapshot, s.opts.DataDir)
	}
	old := s.cur.Load()
	if old != nil && old.ID == id {
		return false, nil
	}
	if e := s.curErr.Load(); e != nil && *e == id {
		return false, fmt.Errorf("snapshot %s failed to load before; waiting for the next one", id)
	}
	start := time.Now()
	src, err := openSource(s.opts.DataDir, id)
	var ix *Index
	if err == nil {
		ix, err = loadIndex(src, s.opts.mapOptions)
	}
	if err != nil {
		s.curErr.Store(&id)
		s.log.Error("cannot serve the new snapshot; still serving the old one", "snapshot", id, "serving", s.Snapshot(), "err", err)
		return false, err
	}
	s.curErr.Store(nil)
	s.cur.Store(ix)
	s.log.Info("serving snapshot", "snapshot", ix.ID, "domains", ix.Len(), "links", ix.edges, "placed", ix.mapData.placed,
		"seconds", time.Since(start).Round(time.Millisecond).Seconds())
	if ix.skipped > 0 {
		s.log.Warn("links naming a domain id domains.parquet lacks were skipped", "snapshot", ix.ID, "links", ix.skipped)
	}
	return true, nil
}

// Watch calls Refresh every interval until ctx ends.
func (s *Server) Watch(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_, _ = s.Refresh() // errors are logged by Refresh
		}
	}
}

// Close releases the snapshot being served (it holds no open file: this
// lets its memory go).
func (s *Server) Close() error {
	s.cur.Store(nil)
	return nil
}

// Limits of the HTTP server: slow or oversized requests are cut off
// rather than held (a 10 MB query string is refused with 431 by net/http).
const (
	MaxHeaderBytes    = 32 << 10
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 2 * time.Minute // the map's points for a slow reader
	idleTimeout       = time.Minute
)

// Serve serves h on ln with the server's limits until ctx ends, then
// shuts down gracefully (5 s for requests in flight).
func Serve(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout,
		WriteTimeout: writeTimeout, IdleTimeout: idleTimeout, MaxHeaderBytes: MaxHeaderBytes,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
