package webbotauth_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

// verifier checks Web Bot Auth request signatures from RFC 9421 §3.2 and
// draft-ietf-webbotauth-httpsig-protocol-01 §5.4, independently of the
// package: it parses the received fields and rebuilds the base from the
// request as the server got it.
type verifier struct {
	keys map[string]ed25519.PublicKey // by keyid
	now  time.Time
}

func (v *verifier) verify(r *http.Request) error {
	inputs, err := parseDictionary(strings.Join(r.Header.Values("Signature-Input"), ", "))
	if err != nil {
		return fmt.Errorf("Signature-Input: %w", err)
	}
	sigs, err := parseDictionary(strings.Join(r.Header.Values("Signature"), ", "))
	if err != nil {
		return fmt.Errorf("Signature: %w", err)
	}
	var errs []string
	for _, in := range inputs {
		if tag, _ := in.val.param("tag"); tag.kind != sfStringKind || tag.str != "web-bot-auth" {
			continue // other tags are not ours to check
		}
		if err := v.verifyOne(r, in, sigs); err != nil {
			errs = append(errs, in.key+": "+err.Error())
			continue
		}
		return nil
	}
	if len(errs) == 0 {
		return fmt.Errorf("no web-bot-auth signature")
	}
	return fmt.Errorf("%s", strings.Join(errs, "; "))
}

func (v *verifier) verifyOne(r *http.Request, in sfMember, sigs []sfMember) error {
	list := in.val
	if list.kind != sfInnerList {
		return fmt.Errorf("not an inner list")
	}
	created, ok := list.param("created")
	if !ok || created.kind != sfInteger {
		return fmt.Errorf("no created")
	}
	expires, ok := list.param("expires")
	if !ok || expires.kind != sfInteger {
		return fmt.Errorf("no expires")
	}
	if created.num > v.now.Unix() {
		return fmt.Errorf("created in the future")
	}
	if expires.num <= v.now.Unix() {
		return fmt.Errorf("expired")
	}
	if alg, ok := list.param("alg"); ok && (alg.kind != sfStringKind || alg.str != "ed25519") {
		return fmt.Errorf("alg %s", alg.bare())
	}
	kid, _ := list.param("keyid")
	pub, ok := v.keys[kid.str]
	if kid.kind != sfStringKind || !ok {
		return fmt.Errorf("unknown keyid %s", kid.bare())
	}
	var sig []byte
	for _, s := range sigs {
		if s.key == in.key && s.val.kind == sfByteSeq {
			sig = s.val.bytes
		}
	}
	if sig == nil {
		return fmt.Errorf("no Signature member")
	}
	var lines []string
	seenAuthority, seenAgent := false, false
	for _, c := range list.inner {
		if c.kind != sfStringKind {
			return fmt.Errorf("component is not a string")
		}
		var val string
		switch c.str {
		case "@method":
			val = r.Method
		case "@authority":
			seenAuthority = true
			val = strings.ToLower(r.Host)
			val = strings.TrimSuffix(val, ":80") // plain-http test server
		case "@path":
			val = r.URL.EscapedPath()
			if val == "" {
				val = "/"
			}
		default:
			if strings.HasPrefix(c.str, "@") {
				return fmt.Errorf("unsupported %s", c.str)
			}
			fv := r.Header.Values(c.str)
			if len(fv) == 0 {
				return fmt.Errorf("field %s missing", c.str)
			}
			for i := range fv {
				fv[i] = strings.TrimSpace(fv[i])
			}
			val = strings.Join(fv, ", ")
			if key, ok := c.param("key"); ok {
				d, err := parseDictionary(val)
				if err != nil {
					return fmt.Errorf("%s: %w", c.str, err)
				}
				val = ""
				for _, m := range d {
					if m.key == key.str {
						val = m.val.serialize()
					}
				}
				if val == "" {
					return fmt.Errorf("%s has no member %s", c.str, key.str)
				}
			}
			if c.str == "signature-agent" {
				seenAgent = true
			}
		}
		lines = append(lines, c.serialize()+": "+val)
	}
	if !seenAuthority || !seenAgent {
		return fmt.Errorf("@authority and signature-agent must be covered")
	}
	lines = append(lines, `"@signature-params": `+list.serialize())
	if !ed25519.Verify(pub, []byte(strings.Join(lines, "\n")), sig) {
		return fmt.Errorf("bad signature")
	}
	return nil
}

func testPrivateKey(t testing.TB) ed25519.PrivateKey {
	blk, _ := pem.Decode([]byte("-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF\n-----END PRIVATE KEY-----\n"))
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey)
}

// tamper changes requests after they were signed.
type tamper struct {
	next http.RoundTripper
	fn   func(*http.Request)
}

func (t tamper) CloseIdleConnections() {
	t.next.(interface{ CloseIdleConnections() }).CloseIdleConnections()
}

func (t tamper) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.fn != nil {
		t.fn(r)
	}
	return t.next.RoundTrip(r)
}

func TestIndependentVerifier(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	priv := testPrivateKey(t)
	kr := webbotauth.NewKeyring(webbotauth.NewKey(priv, t0.Add(-time.Hour)))
	v := &verifier{keys: map[string]ed25519.PublicKey{webbotauth.Thumbprint(priv.Public().(ed25519.PublicKey)): priv.Public().(ed25519.PublicKey)}, now: t0}

	var mu sync.Mutex
	var results []string // per request the server saw: path and verdict
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := v.verify(r)
		mu.Lock()
		verdict := "ok"
		if err != nil {
			verdict = err.Error()
		}
		results = append(results, r.URL.Path+" "+verdict)
		mu.Unlock()
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/after%20redirect", http.StatusFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
		}
	}))
	defer srv.Close()

	for _, tc := range []struct {
		name   string
		form   webbotauth.AgentForm
		clock  time.Time
		path   string
		tamper func(*http.Request)
		want   []string // verdict prefixes, one per request seen
	}{
		{name: "form A", path: "/robots.txt", want: []string{"/robots.txt ok"}},
		{name: "form C", form: webbotauth.FormString, path: "/", want: []string{"/ ok"}},
		{name: "empty path", path: "", want: []string{"/ ok"}},
		{name: "escaped path", path: "/caf%C3%A9/a%2Fb?q=1", want: []string{"/café/a/b ok"}},
		{name: "redirect hops signed afresh", path: "/redirect", want: []string{"/redirect ok", "/after redirect ok"}},
		{name: "just inside the window", clock: t0.Add(-webbotauth.SignatureLifetime + time.Second), path: "/", want: []string{"/ ok"}},
		{name: "expired", clock: t0.Add(-webbotauth.SignatureLifetime), path: "/", want: []string{"/ sig1: expired"}},
		{name: "created in the future", clock: t0.Add(time.Minute), path: "/", want: []string{"/ sig1: created in the future"}},
		{name: "authority changed", path: "/", tamper: func(r *http.Request) { r.Host = "other.example" },
			want: []string{"/ sig1: bad signature"}},
		{name: "path changed", path: "/a", tamper: func(r *http.Request) { r.URL.Path = "/b" },
			want: []string{"/b sig1: bad signature"}},
		{name: "method changed", path: "/", tamper: func(r *http.Request) { r.Method = "HEAD" },
			want: []string{"/ sig1: bad signature"}},
		{name: "signature agent changed (form A)", path: "/", tamper: func(r *http.Request) {
			r.Header.Set("Signature-Agent", `sig1="https://evil.example/.well-known/http-message-signatures-directory"`)
		}, want: []string{"/ sig1: bad signature"}},
		{name: "signature agent changed (form C)", form: webbotauth.FormString, path: "/", tamper: func(r *http.Request) {
			r.Header.Set("Signature-Agent", `"https://evil.example"`)
		}, want: []string{"/ sig1: bad signature"}},
		{name: "expires pushed out", path: "/", tamper: func(r *http.Request) {
			in := r.Header.Get("Signature-Input")
			r.Header.Set("Signature-Input", strings.Replace(in, ";expires=", ";expires=9", 1))
		}, want: []string{"/ sig1: bad signature"}},
		{name: "created moved back", path: "/", tamper: func(r *http.Request) {
			in := r.Header.Get("Signature-Input")
			r.Header.Set("Signature-Input", strings.Replace(in, ";created=1", ";created=0", 1))
		}, want: []string{"/ sig1: bad signature"}},
		{name: "signature agent missing", path: "/", tamper: func(r *http.Request) { r.Header.Del("Signature-Agent") },
			want: []string{"/ sig1: field signature-agent missing"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := tc.clock
			if clock.IsZero() {
				clock = t0
			}
			s, err := webbotauth.NewSigner(kr, webbotauth.SignerOptions{Form: tc.form})
			if err != nil {
				t.Fatal(err)
			}
			client := &http.Client{Transport: webbotauth.NewTransport(tamper{&http.Transport{}, tc.tamper}, s,
				func() time.Time { return clock })}
			defer client.CloseIdleConnections()
			mu.Lock()
			results = nil
			mu.Unlock()
			resp, err := client.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			got := append([]string(nil), results...)
			mu.Unlock()
			if len(got) != len(tc.want) {
				t.Fatalf("server saw %q, want %q", got, tc.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tc.want[i]) {
					t.Errorf("request %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// Each request gets its own 64-byte nonce; the caller's request is not
// changed by the transport.
func TestTransportNonceAndClone(t *testing.T) {
	t0 := time.Unix(1735689600, 0)
	kr := webbotauth.NewKeyring(webbotauth.NewKey(testPrivateKey(t), t0))
	s, err := webbotauth.NewSigner(kr, webbotauth.SignerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var inputs []string
	rt := webbotauth.NewTransport(roundTripFunc(func(r *http.Request) (*http.Response, error) {
		inputs = append(inputs, r.Header.Get("Signature-Input"))
		return &http.Response{StatusCode: 200, Body: io.NopCloser(bytes.NewReader(nil)), Request: r}, nil
	}), s, func() time.Time { return t0 })
	req, _ := http.NewRequest("GET", "https://example.com/", nil)
	for range 3 {
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(req.Header) != 0 {
		t.Errorf("caller's request changed: %v", req.Header)
	}
	seen := map[string]bool{}
	for _, in := range inputs {
		d, err := parseDictionary(in)
		if err != nil || len(d) != 1 {
			t.Fatalf("Signature-Input %q: %v", in, err)
		}
		n, _ := d[0].val.param("nonce")
		raw, err := base64.StdEncoding.DecodeString(n.str)
		if err != nil || len(raw) != 64 {
			t.Errorf("nonce %q: %d bytes, %v", n.str, len(raw), err)
		}
		if seen[n.str] {
			t.Errorf("nonce %q reused", n.str)
		}
		seen[n.str] = true
		c, _ := d[0].val.param("created")
		e, _ := d[0].val.param("expires")
		if e.num-c.num != 300 {
			t.Errorf("expires - created = %d, want 300", e.num-c.num)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func FuzzParseDictionary(f *testing.F) {
	for _, s := range []string{
		`sig1=("@method" "@authority" "@path" "signature-agent";key="sig1");created=1735689600;expires=1735693200;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";nonce="f9npeRprRY+t1xxa/Gd5cnJ+QIkmAYZd1jhP8SQcpYEBZV+HTurUVBVwmqaUjeVUnf+KNrFKJFDePNF2Hj6kHA==";tag="web-bot-auth"`,
		`sig1=:qjFjrJyMuZc1TTtFRhFJTv167MRaBrT3Cc8T8czgvJ1ZByZc1apCvkXHzFGvBjKYnr8EmUmWVvfwijnE9ahoCA==:`,
		`binding0=("@authority";req "content-digest");created=1, binding1=();a;b=?0`,
		`a=1.5, b=-3, c=tok/en:x, d, e;f="g\"h"`,
		`a=(`, `a="unterminated`, `=`, `a=,`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseDictionary(s)
		if err != nil {
			return
		}
		out := serializeDictionary(d)
		d2, err := parseDictionary(out)
		if err != nil {
			t.Fatalf("%q parsed, but its serialisation %q does not: %v", s, out, err)
		}
		if out2 := serializeDictionary(d2); out2 != out {
			t.Fatalf("not stable: %q -> %q -> %q", s, out, out2)
		}
	})
}

func TestTransportClosesIdleConnections(t *testing.T) {
	closed := false
	next := closeRecorder{func() { closed = true }}
	kr := webbotauth.NewKeyring(webbotauth.NewKey(testPrivateKey(t), time.Unix(0, 0)))
	s, _ := webbotauth.NewSigner(kr, webbotauth.SignerOptions{})
	(&http.Client{Transport: webbotauth.NewTransport(next, s, nil)}).CloseIdleConnections()
	if !closed {
		t.Error("CloseIdleConnections did not reach the next layer")
	}
}

type closeRecorder struct{ fn func() }

func (c closeRecorder) RoundTrip(*http.Request) (*http.Response, error) { return nil, nil }
func (c closeRecorder) CloseIdleConnections()                           { c.fn() }
