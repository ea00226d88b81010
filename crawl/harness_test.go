package crawl

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

// web is a tiny loopback web for visit tests: handlers by "host/path"
// (path "" matches any path of the host not listed), every request logged.
type web struct {
	t        *testing.T
	srv      *httptest.Server
	mu       sync.Mutex
	handlers map[string]http.HandlerFunc
	log      []string // "host path signed?"
}

func newWeb(t *testing.T) *web {
	w := &web{t: t, handlers: map[string]http.HandlerFunc{}}
	w.srv = httptest.NewServer(http.HandlerFunc(w.serve))
	t.Cleanup(w.srv.Close)
	return w
}

func (w *web) serve(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	signed := r.Header.Get("Signature") != "" && r.Header.Get("Signature-Input") != ""
	entry := r.Host + " " + r.URL.RequestURI()
	if !signed {
		entry += " UNSIGNED"
	}
	w.log = append(w.log, entry)
	h := w.handlers[r.Host+r.URL.RequestURI()]
	if h == nil {
		h = w.handlers[r.Host]
	}
	w.mu.Unlock()
	if h == nil {
		http.NotFound(rw, r)
		return
	}
	h(rw, r)
}

// on sets the handler of host+path ("a.test/robots.txt") or of a whole host ("a.test").
func (w *web) on(hostPath string, h http.HandlerFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.handlers[hostPath] = h
}

func (w *web) html(hostPath, body string) {
	w.on(hostPath, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(rw, body)
	})
}

func (w *web) text(hostPath string, status int, body string) {
	w.on(hostPath, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/plain")
		rw.WriteHeader(status)
		fmt.Fprint(rw, body)
	})
}

func (w *web) redirect(hostPath string, status int, to string) {
	w.on(hostPath, func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Location", to)
		rw.WriteHeader(status)
	})
}

func (w *web) requests() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.log...)
}

func (w *web) port() string {
	_, p, _ := net.SplitHostPort(w.srv.Listener.Addr().String())
	return p
}

// stubResolver resolves every name to 127.0.0.1 except those listed as missing.
type stubResolver struct{ missing map[string]bool }

func (s stubResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	if s.missing[host] {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
}

// testOptions points everything at the web: port 443 and 80 alike go to the
// plain HTTP server, so https attempts fail the TLS handshake and fall back.
func (w *web) options() Options {
	return Options{
		MinDelaySet: true,
		ConnectTo:   []fetch.ConnectTo{{ToPort: w.port()}},
		// The rule keeps each host (stubResolver resolves it), so this is
		// not a mapped crawl: it says who runs it, as a real one must.
		UserAgent: DefaultUserAgent, RobotsToken: DefaultRobotsToken,
		From: "crawler@example.org", SignatureAgentURL: webbotauth.DefaultAgentURL,
		Resolver:        stubResolver{},
		ResponseTimeout: 2 * time.Second,
		ConnectTimeout:  2 * time.Second,
		Sign: func(r *http.Request) error {
			r.Header.Set("Signature-Input", `sig1=("@authority");tag="web-bot-auth"`)
			r.Header.Set("Signature", "sig1=:dGVzdA==:")
			return nil
		},
	}
}

func (w *web) crawler(opts Options) *Crawler {
	c, err := NewCrawler(opts)
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

func htmlPage(links ...string) string {
	var b strings.Builder
	b.WriteString("<html><head><title>t</title></head><body>")
	for _, l := range links {
		text := "link"
		if href, words, ok := strings.Cut(l, "|"); ok {
			l, text = href, words
		}
		fmt.Fprintf(&b, `<a href="%s">%s</a> `, l, text)
	}
	b.WriteString("</body></html>")
	return b.String()
}
