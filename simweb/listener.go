package simweb

import (
	"bufio"
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// sniffListener accepts connections on one port and hands each to the HTTP
// server as it is (plain HTTP) or wrapped in TLS, by its first byte: a TLS
// handshake starts with record type 0x16, an HTTP request with a letter.
type sniffListener struct {
	ln    net.Listener
	tls   *tls.Config
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	wg    sync.WaitGroup
	clock func() time.Time

	mu      sync.Mutex
	pending map[net.Conn]struct{} // being sniffed: closed by Close
}

func newSniffListener(ln net.Listener, cfg *tls.Config, clock func() time.Time) *sniffListener {
	l := &sniffListener{ln: ln, tls: cfg, conns: make(chan net.Conn), done: make(chan struct{}),
		pending: map[net.Conn]struct{}{}, clock: clock}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

func (l *sniffListener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return // closed (a loopback listener has no other lasting error)
		}
		l.mu.Lock()
		select {
		case <-l.done:
			l.mu.Unlock()
			c.Close()
			return
		default:
		}
		l.pending[c] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.sniff(c, l.clock())
	}
}

// sniff reads the first byte (waiting at most 10 s for it) and passes the
// connection on.
func (l *sniffListener) sniff(c net.Conn, accepted time.Time) {
	defer l.wg.Done()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	l.mu.Lock()
	delete(l.pending, c)
	l.mu.Unlock()
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	var out net.Conn = &peekedConn{Conn: c, r: br, accepted: accepted}
	if first[0] == 0x16 {
		out = tls.Server(out, l.tls)
	}
	select {
	case l.conns <- out:
	case <-l.done:
		c.Close()
	}
}

// Accept hands the HTTP server the next sniffed connection.
func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting, closes connections still being sniffed and waits
// for its goroutines.
func (l *sniffListener) Close() error {
	l.once.Do(func() {
		l.mu.Lock()
		close(l.done)
		for c := range l.pending {
			c.Close()
		}
		l.mu.Unlock()
		l.ln.Close()
	})
	l.wg.Wait()
	return nil
}

func (l *sniffListener) Addr() net.Addr { return l.ln.Addr() }

// peekedConn replays the sniffed byte before the rest of the stream.
type peekedConn struct {
	net.Conn
	r        *bufio.Reader
	accepted time.Time
}

// connInfo is what the request log knows of a connection.
type connInfo struct {
	accepted time.Time
	requests int // served so far (a connection serves one at a time)
}

type connInfoKey struct{}

// connContext stores the connection's connInfo in its requests' context.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if p, ok := c.(*peekedConn); ok {
		return context.WithValue(ctx, connInfoKey{}, &connInfo{accepted: p.accepted})
	}
	return ctx
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
