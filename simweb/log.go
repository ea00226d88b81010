package simweb

import (
	"bufio"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
)

// Request is one request as the server saw it.
type Request struct {
	Seq            int    // order of arrival (headers read), from 0 after the last Reset
	Scheme         string // "http" or "https"
	Host           string // lower case, without port
	Site           string // the host's registrable domain; the host itself when no site has it
	Method         string
	Path           string // path and query as sent
	UserAgent      string
	Signature      string
	SignatureInput string
	SignatureAgent string
	// Start is when the client began the request as well as the server
	// can tell: for the first request of a connection, when the connection
	// was accepted (its TLS handshake is part of the request); otherwise
	// when the request's headers were read (Received). End is when the
	// handler finished. All from Config.Clock.
	Start, Received, End time.Time
	Status               int   // 0: the connection was closed unanswered
	Bytes                int64 // body bytes written
	// Aborted: the client went away before the answer was written (a
	// hanging robots.txt given up, a 3 MB page cut off). Its End is when
	// the server noticed, so it may overlap the client's next request.
	Aborted bool
}

// requestLog is the web's record of every request.
type requestLog struct {
	mu   sync.Mutex
	reqs []Request
	next int // Seq of the next request to arrive
}

// arrive numbers a request as it arrives.
func (l *requestLog) arrive() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	return l.next - 1
}

func (l *requestLog) add(r Request) {
	l.mu.Lock()
	l.reqs = append(l.reqs, r)
	l.mu.Unlock()
}

// snapshot returns the requests ordered by start time (ties by arrival).
func (l *requestLog) snapshot() []Request {
	l.mu.Lock()
	out := slices.Clone(l.reqs)
	l.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Request) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return a.Seq - b.Seq
	})
	return out
}

func (l *requestLog) reset() {
	l.mu.Lock()
	l.reqs, l.next = nil, 0
	l.mu.Unlock()
}

// recorder captures the status and body size a handler writes.
type recorder struct {
	http.ResponseWriter
	status  int
	bytes   int64
	failed  bool
	hijackd bool
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	if err != nil {
		r.failed = true
	}
	return n, err
}

func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	r.hijackd = true
	return http.NewResponseController(r.ResponseWriter).Hijack()
}

func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
