// Package control lets other mapthenet commands ask a running crawl to do
// work that needs its store: the crawl holds the Badger store open (one
// process at a time), so a `rebuild` started from cron while a crawl runs
// cannot open it and instead asks the crawl, over the Unix socket
// <data-dir>/crawl.sock, to run the rebuild in its process (the store's
// snapshots are consistent views, so the crawl goes on meanwhile).
//
// The protocol is one JSON request line, {"command": NAME, "args": {...}},
// answered by one JSON line, {"ok": true, "result": {...}} or {"ok": false,
// "error": "...", "code": "busy"}. The socket is made readable and writable
// by its owner only.
//
// Handlers run concurrently, one goroutine per connection: a handler that
// must not run twice at once guards itself and refuses with an error
// wrapping ErrBusy (a second rebuild refuses rather than queue behind the
// first). A handler's context ends when the server closes or when the
// caller hangs up (a rebuild whose caller was killed stops).
package control

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// SocketName is the socket's file name under the data directory.
const SocketName = "crawl.sock"

// ErrNoServer: no crawl answers on the socket.
var ErrNoServer = errors.New("control: no running crawl answers on the socket")

// ErrBusy: the command is already running. A handler returns an error
// wrapping it; Call returns one wrapping it too, so the caller can exit
// with its "busy" status.
var ErrBusy = errors.New("busy")

const codeBusy = "busy"

// Busy returns an error that reads msg and wraps ErrBusy.
func Busy(msg string) error { return busyError(msg) }

type busyError string

func (e busyError) Error() string        { return string(e) }
func (e busyError) Is(target error) bool { return target == ErrBusy }

// Handler does one command. args is the request's raw args; the result is
// sent back as JSON.
type Handler func(ctx context.Context, args json.RawMessage) (any, error)

type request struct {
	Command string          `json:"command"`
	Args    json.RawMessage `json:"args,omitempty"`
}

type response struct {
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
	Code   string          `json:"code,omitempty"` // "busy": ErrBusy
}

// Server answers requests on a Unix socket until Close.
type Server struct {
	path     string
	ln       net.Listener
	handlers map[string]Handler
	log      *slog.Logger
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	active   atomic.Int32 // handlers running
}

// Serve listens on path. A socket file left by a crawl that died is
// replaced; one that a live process answers on is an error.
func Serve(path string, handlers map[string]Handler, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := os.Stat(path); err == nil {
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("control: %s: another crawl is running", path)
		}
		os.Remove(path) // stale
	}
	ln, err := listenPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{path: path, ln: ln, handlers: handlers, log: log, ctx: ctx, cancel: cancel}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// listenPrivate listens on a Unix socket at path that only its owner can
// connect to, from the first moment: the socket is made inside a new 0700
// directory beside path, made 0600 there, then renamed into place. (Not
// syscall.Umask around Listen: the umask is the process's, and another
// goroutine creating a file meanwhile, a snapshot say, would get it.)
func listenPrivate(path string) (net.Listener, error) {
	dir, err := os.MkdirTemp(filepath.Dir(path), ".sock-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false) // Close removes path itself
	if err := os.Chmod(tmp, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return // closed
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer c.Close()
			s.serve(c)
		}()
	}
}

func (s *Server) serve(c net.Conn) {
	ctx, cancel := context.WithCancel(s.ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() { // unblock a read when the server closes or the answer is sent
		<-ctx.Done()
		c.Close()
	})
	br := bufio.NewReader(c)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return
	}
	// The caller sends nothing after its line: a read that ends means it
	// hung up, and the command it asked for is no longer wanted.
	wg.Go(func() {
		var b [1]byte
		br.Read(b[:])
		cancel()
	})
	var req request
	resp := response{}
	if err := json.Unmarshal(line, &req); err != nil {
		resp.Error = "bad request: " + err.Error()
	} else if h := s.handlers[req.Command]; h == nil {
		resp.Error = fmt.Sprintf("unknown command %q", req.Command)
	} else {
		s.log.Info("control request", "command", req.Command)
		s.active.Add(1)
		result, err := h(ctx, req.Args)
		s.active.Add(-1)
		if err != nil {
			resp.Error = err.Error()
			if errors.Is(err, ErrBusy) {
				resp.Code = codeBusy
			}
		} else if raw, err := json.Marshal(result); err != nil {
			resp.Error = err.Error()
		} else {
			resp.OK, resp.Result = true, raw
		}
	}
	out, _ := json.Marshal(resp)
	c.Write(append(out, '\n'))
	// The deferred cancel closes the connection, which ends the reader.
}

// Close stops listening, cancels running handlers, waits for them and
// removes the socket file.
func (s *Server) Close() error {
	s.cancel()
	err := s.ln.Close()
	if errors.Is(err, net.ErrClosed) {
		err = nil // Shutdown closed it
	}
	s.wg.Wait()
	os.Remove(s.path)
	return err
}

// Shutdown stops taking requests and lets the running ones finish (a
// crawl that ends on its own lets a rebuild it runs for cron complete),
// until ctx ends; then it closes the server, cancelling what still runs.
func (s *Server) Shutdown(ctx context.Context) error {
	if err := s.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return errors.Join(err, s.Close())
	}
	if n := s.active.Load(); n > 0 {
		s.log.Info("waiting for control commands in progress", "commands", n)
	}
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	err := s.Close()
	<-done
	return err
}

// Call sends one command to the crawl listening on path and decodes its
// result into result (nil: ignored). ErrNoServer when nothing answers.
func Call(ctx context.Context, path, command string, args, result any) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return fmt.Errorf("%w (%s): %v", ErrNoServer, path, err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	req, _ := json.Marshal(request{Command: command, Args: raw})
	if _, err := c.Write(append(req, '\n')); err != nil {
		return fmt.Errorf("control: %w", err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("control: the crawl closed the connection without an answer (is it stopping?): %w", err)
	}
	var resp response
	if err := json.Unmarshal(line, &resp); err != nil {
		return fmt.Errorf("control: bad answer: %w", err)
	}
	if !resp.OK {
		if resp.Code == codeBusy {
			return Busy(resp.Error)
		}
		return fmt.Errorf("crawl: %s", resp.Error)
	}
	if result != nil && len(resp.Result) > 0 {
		return json.Unmarshal(resp.Result, result)
	}
	return nil
}
