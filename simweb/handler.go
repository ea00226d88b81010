package simweb

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ServeHTTP answers every request of the web by its Host header and logs it.
func (w *Web) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	start := w.cfg.Clock()
	hostName := strings.ToLower(r.Host)
	if hn, _, err := net.SplitHostPort(hostName); err == nil {
		hostName = hn
	}
	rec := &recorder{ResponseWriter: rw}
	entry := Request{
		Seq: w.log.arrive(), Scheme: "http", Host: hostName, Site: hostName, Method: r.Method, Path: r.RequestURI,
		UserAgent: r.UserAgent(), Signature: r.Header.Get("Signature"),
		SignatureInput: r.Header.Get("Signature-Input"), SignatureAgent: r.Header.Get("Signature-Agent"),
		Start: start, Received: start,
	}
	// The first request of a connection started, for the client, before
	// its dial and TLS handshake: stamp it with the connection's accept
	// time, so that a handshake's length does not shorten the gap seen
	// between it and the request before it (see Request.Start).
	if ci, ok := r.Context().Value(connInfoKey{}).(*connInfo); ok {
		ci.requests++
		if ci.requests == 1 && start.Sub(ci.accepted) < firstRequestWithin {
			entry.Start = ci.accepted
		}
	}
	if r.TLS != nil {
		entry.Scheme = "https"
	}
	defer func() {
		entry.End = w.cfg.Clock()
		entry.Status, entry.Bytes = rec.status, rec.bytes
		// Aborted: the write failed, or the handler ended with nothing
		// written because the client left (or the web closed first).
		entry.Aborted = rec.failed || (!rec.hijackd && (rec.status == 0 || r.Context().Err() != nil))
		w.log.add(entry)
	}()
	h := w.world.byHost[hostName]
	if h == nil {
		http.Error(rec, "simweb: no site answers for this host", http.StatusMisdirectedRequest)
		return
	}
	entry.Site = h.site.Domain
	if h.refuse {
		// Nothing listens for this host: close the connection unanswered.
		if c, _, err := rec.Hijack(); err == nil {
			c.Close()
		}
		return
	}
	if h.slow && !w.wait(r, w.cfg.SlowDelay) {
		panic(http.ErrAbortHandler) // the client left: no answer at all
	}
	if isRobotsPath(r.RequestURI) {
		w.serveRobots(rec, r, h)
		return
	}
	p, how := h.resolve(r.RequestURI)
	if how == answerThrottle {
		rec.Header().Set("Retry-After", w.cfg.Clock().Add(2*time.Hour).UTC().Format(http.TimeFormat))
	}
	w.servePage(rec, r, p)
}

// firstRequestWithin bounds how long after its connection's accept a first
// request may come and still be stamped with the accept time: a connection
// dialed long before its first request (an abandoned dial reused later)
// would otherwise antedate it.
const firstRequestWithin = 5 * time.Second

// wait waits d unless the client gives up or the web closes first.
func (w *Web) wait(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-w.done:
	}
	return false
}

func (w *Web) servePage(rw http.ResponseWriter, r *http.Request, p *page) {
	hd := rw.Header()
	for k, vs := range p.header {
		hd[k] = append([]string(nil), vs...)
	}
	hd.Set("Content-Type", p.ctype)
	if p.location != "" {
		hd.Set("Location", p.location)
	}
	body, gz := p.rendered(strings.Contains(r.Header.Get("Accept-Encoding"), "gzip"))
	if p.gzip {
		hd.Set("Vary", "Accept-Encoding")
	}
	if gz {
		hd.Set("Content-Encoding", "gzip")
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(p.status)
	if r.Method != http.MethodHead {
		_, _ = rw.Write(body) // a write error means the client left: logged as Aborted
	}
}

// robotsRedirects cycles the redirect statuses of a robots.txt chain.
var robotsRedirects = []int{301, 302, 307, 308}

func (w *Web) serveRobots(rw http.ResponseWriter, r *http.Request, h *host) {
	f := &h.robots
	if f.hang {
		// Never answer: the client's timeout (or Close) ends the request.
		select {
		case <-r.Context().Done():
		case <-w.done:
		}
		// Returning would send an empty 200 that a racing client could
		// still read: abort the connection instead.
		panic(http.ErrAbortHandler)
	}
	hop, _ := strconv.Atoi(r.URL.Query().Get("hop"))
	if hop < f.hops {
		rw.Header().Set("Location", "/robots.txt?hop="+strconv.Itoa(hop+1))
		rw.WriteHeader(robotsRedirects[hop%len(robotsRedirects)])
		return
	}
	if f.status != 0 && f.status != http.StatusOK {
		http.Error(rw, http.StatusText(f.status), f.status)
		return
	}
	body := f.text()
	rw.Header().Set("Content-Type", "text/plain; charset=utf-8")
	rw.Header().Set("Content-Length", strconv.Itoa(len(body)))
	rw.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = rw.Write(body)
	}
}
