package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestParseConnectTo(t *testing.T) {
	tests := []struct {
		in   string
		want ConnectTo
		err  bool
	}{
		{"::127.0.0.1:8080", ConnectTo{"", "", "127.0.0.1", "8080"}, false},
		{"Example.COM:443:127.0.0.1:8443", ConnectTo{"example.com", "443", "127.0.0.1", "8443"}, false},
		{"::[::1]:8443", ConnectTo{"", "", "::1", "8443"}, false},
		{"a.com:80::", ConnectTo{"a.com", "80", "", ""}, false},
		{"a.com:80:b.com", ConnectTo{}, true},
		{"a.com:x:b.com:80", ConnectTo{}, true},
		{"a.com:80:b.com:99999", ConnectTo{}, true},
		{"::[::1:80", ConnectTo{}, true},
	}
	for _, tc := range tests {
		got, err := ParseConnectTo(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("ParseConnectTo(%q) = %+v, %v; want %+v, error %v", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestApplyFirstMatchWins(t *testing.T) {
	rules := []ConnectTo{{Host: "a.com", Port: "443", ToHost: "10.0.0.1", ToPort: "1"}, {ToHost: "10.0.0.2"}}
	for _, tc := range []struct{ host, port, wh, wp string }{
		{"a.com", "443", "10.0.0.1", "1"},
		{"A.com.", "443", "10.0.0.1", "1"},
		{"a.com", "80", "10.0.0.2", "80"},
		{"b.com", "443", "10.0.0.2", "443"},
	} {
		h, p := apply(rules, tc.host, tc.port)
		if h != tc.wh || p != tc.wp {
			t.Errorf("apply(%s:%s) = %s:%s, want %s:%s", tc.host, tc.port, h, p, tc.wh, tc.wp)
		}
	}
}

// mapResolver answers from a map; a missing name is NXDOMAIN.
type mapResolver map[string][]string

func (m mapResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	ips, ok := m[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []net.IPAddr
	for _, s := range ips {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

// loopback is the --connect-to rule that lets a test reach its own servers
// on 127.0.0.1: the guard refuses loopback to everything else.
var loopback = []ConnectTo{{Host: "127.0.0.1"}}

func serverPort(t *testing.T, srv *httptest.Server) string {
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return port
}

func newConfig(d *Dialer) *Config {
	return &Config{Dialer: d, UserAgent: "TestBot/1.0", ResponseTimeout: 5 * time.Second, MaxBody: 1024}
}

func TestGetThroughConnectToAndSign(t *testing.T) {
	var gotHost, gotUA, gotSig atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotHost.Store(r.Host)
		gotUA.Store(r.UserAgent())
		gotSig.Store(r.Header.Get("Signature"))
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()
	d := NewDialer(mapResolver{}, []ConnectTo{{ToHost: "127.0.0.1", ToPort: serverPort(t, srv)}}, time.Second, 4)
	cfg := newConfig(d)
	cfg.Sign = func(r *http.Request) error { r.Header.Set("Signature", "sig1=:x:"); return nil }
	c := cfg.NewClient()
	defer c.Close()
	r, err := c.Get(context.Background(), "http://www.example.com/", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(r.Body) != "hello" || gotHost.Load() != "www.example.com" || gotUA.Load() != "TestBot/1.0" || gotSig.Load() != "sig1=:x:" {
		t.Fatalf("body %q host %v ua %v sig %v", r.Body, gotHost.Load(), gotUA.Load(), gotSig.Load())
	}
}

func TestBodyCapAndDrop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/img" {
			w.Header().Set("Content-Type", "image/png")
		}
		w.Write([]byte(strings.Repeat("x", 5000)))
	}))
	defer srv.Close()
	c := newConfig(NewDialer(nil, loopback, time.Second, 0)).NewClient()
	defer c.Close()
	r, err := c.Get(context.Background(), srv.URL+"/big", nil, nil)
	if err != nil || len(r.Body) != 1024 || !r.Truncated {
		t.Fatalf("len %d truncated %v err %v", len(r.Body), r.Truncated, err)
	}
	onlyHTML := func(_ int, h http.Header) bool { return !strings.HasPrefix(h.Get("Content-Type"), "image/") }
	r, err = c.Get(context.Background(), srv.URL+"/img", onlyHTML, nil)
	if err != nil || !r.Dropped || r.Body != nil {
		t.Fatalf("dropped %v body %d err %v", r.Dropped, len(r.Body), err)
	}
}

func TestNoRedirectFollowed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/elsewhere", http.StatusMovedPermanently)
	}))
	defer srv.Close()
	c := newConfig(NewDialer(nil, loopback, time.Second, 0)).NewClient()
	defer c.Close()
	r, err := c.Get(context.Background(), srv.URL+"/", nil, nil)
	if err != nil || r.Status != 301 || r.Location != "/elsewhere" {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestErrorKinds(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer tlsSrv.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()

	d := NewDialer(mapResolver{"example.com": {"127.0.0.1"}}, append([]ConnectTo{{Host: "example.com"}}, loopback...), 10*time.Second, 0)
	cfg := newConfig(d)
	c := cfg.NewClient()
	defer c.Close()
	short := newConfig(d)
	short.ResponseTimeout = 100 * time.Millisecond
	cs := short.NewClient()
	defer cs.Close()
	for _, tc := range []struct {
		url  string
		kind Kind
		want string
	}{
		{"http://nowhere.test/", KindDNS, "dns: no such host"},
		{"http://" + closedAddr + "/", KindConnect, "connection refused"},
		{"https://example.com:" + serverPort(t, tlsSrv) + "/", KindTLS, "tls: certificate not valid"},
		{slow.URL + "/", KindTimeout, "timeout"},
	} {
		c := c
		if tc.kind == KindTimeout {
			c = cs
		}
		_, err := c.Get(context.Background(), tc.url, nil, nil)
		var fe *Error
		if !errors.As(err, &fe) || fe.Kind != tc.kind || fe.Short() != tc.want {
			t.Errorf("%s: err %v, want kind %d %q", tc.url, err, tc.kind, tc.want)
		}
		if fe != nil && (strings.Contains(fe.Short(), "127.0.0.1") || strings.Contains(fe.Short(), "example")) {
			t.Errorf("short reason %q names an address", fe.Short())
		}
	}
	// Trusting the test server's certificate makes the same request pass.
	cfg2 := newConfig(d)
	cfg2.RootCAs = tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	c2 := cfg2.NewClient()
	defer c2.Close()
	r, err := c2.Get(context.Background(), "https://example.com:"+serverPort(t, tlsSrv)+"/", nil, nil)
	if err != nil || !r.TLS {
		t.Fatalf("with the CA: %v, tls %v", err, r != nil && r.TLS)
	}
}

func TestConnectionCap(t *testing.T) {
	release := make(chan struct{})
	var inFlight, maxSeen atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		for {
			m := maxSeen.Load()
			if n <= m || maxSeen.CompareAndSwap(m, n) {
				break
			}
		}
		<-release
		inFlight.Add(-1)
	}))
	defer srv.Close()
	d := NewDialer(nil, loopback, time.Second, 2)
	cfg := newConfig(d)
	done := make(chan struct{})
	for range 5 {
		go func() {
			c := cfg.NewClient()
			defer c.Close()
			r, err := c.Get(context.Background(), srv.URL+"/", nil, nil)
			if err == nil {
				io.Discard.Write(r.Body)
			}
			done <- struct{}{}
		}()
	}
	for len(d.sem) < 2 {
		runtime.Gosched() // until two requests hold the cap
	}
	close(release)
	for range 5 {
		<-done
	}
	if maxSeen.Load() > 2 {
		t.Fatalf("%d connections at once, cap 2", maxSeen.Load())
	}
}

func FuzzParseConnectTo(f *testing.F) {
	for _, s := range []string{"::127.0.0.1:8080", "a.com:443:[::1]:8443", "[:", "::::", "a:1:b:2:c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseConnectTo(s)
		if err != nil {
			return
		}
		h, p := apply([]ConnectTo{c}, "example.com", "443")
		if h == "" && c.ToHost != "" || p == "" {
			t.Fatalf("%q: apply gave %q:%q", s, h, p)
		}
	})
}

func TestSinkStreamsCappedBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/err" {
			w.WriteHeader(403)
		}
		w.Write([]byte(strings.Repeat("y", 5000)))
	}))
	defer srv.Close()
	c := newConfig(NewDialer(nil, loopback, time.Second, 0)).NewClient()
	defer c.Close()
	var got int
	sink := func(status int, h http.Header, body io.Reader) {
		b, _ := io.ReadAll(body)
		got = len(b)
	}
	r, err := c.Get(context.Background(), srv.URL+"/", nil, sink)
	if err != nil || got != 1024 || r.Body != nil || r.Bytes != 1024 || !r.Truncated {
		t.Fatalf("streamed %d, body %d, bytes %d, truncated %v, err %v", got, len(r.Body), r.Bytes, r.Truncated, err)
	}
	got = -1
	r, err = c.Get(context.Background(), srv.URL+"/err", nil, sink)
	if err != nil || got != -1 || len(r.Body) != 1024 || r.Status != 403 {
		t.Fatalf("error status: sink %d, body %d, err %v", got, len(r.Body), err)
	}
}
