package removal

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func TestTokenStable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "keys")
	if _, err := LoadSecret(dir); !errors.Is(err, ErrNoSecret) {
		t.Fatalf("LoadSecret before any: %v", err)
	}
	s1, err := LoadOrCreateSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := LoadOrCreateSecret(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(s1) != string(s2) || len(s1) != 32 {
		t.Fatalf("secret changed between loads")
	}
	fi, _ := os.Stat(filepath.Join(dir, SecretFile))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("secret mode %o", fi.Mode().Perm())
	}
	tok := Token(s1, "example.com")
	if len(tok) != 32 || tok != Token(s2, "example.com") {
		t.Errorf("token %q not stable", tok)
	}
	if Token(s1, "example.org") == tok {
		t.Error("two domains share a token")
	}
	other := make([]byte, 32)
	if Token(other, "example.com") == tok {
		t.Error("two secrets give one token")
	}
	// Pinned: the same secret gives the same token in every release.
	if got := Token([]byte("0123456789abcdef"), "example.com"); got != "2e3e837a2692cf1a37794b3421d5a5b5" {
		t.Errorf("pinned token changed: %s (tokens already handed out would stop working)", got)
	}
}

type fakeResolver struct {
	recs []string
	err  error
}

func (f fakeResolver) LookupTXT(_ context.Context, name string) ([]string, error) {
	return f.recs, f.err
}

type fakeRemover struct {
	calls []string
}

func (f *fakeRemover) RemoveDomain(name, reason, proof string, at time.Time) error {
	f.calls = append(f.calls, name+"|"+reason+"|"+proof+"|"+at.Format(time.RFC3339))
	return nil
}

// web serves example.com on loopback over https (port 443) and http (port
// 80) through a test dialer; routes are per test.
type web struct {
	mu     sync.Mutex
	routes map[string]http.HandlerFunc // "https /path"
	seen   []string                    // "https /path signed"
	tls    *httptest.Server
	plain  *httptest.Server
}

func newWeb(t *testing.T) *web {
	w := &web{}
	handler := func(scheme string) http.Handler {
		return http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			w.mu.Lock()
			signed := ""
			if r.Header.Get("Signature") != "" && strings.Contains(r.Header.Get("Signature-Agent"), "mapthenet") {
				signed = " signed"
			}
			w.seen = append(w.seen, scheme+" "+r.URL.Path+signed)
			h := w.routes[scheme+" "+r.URL.Path]
			w.mu.Unlock()
			if h == nil {
				http.NotFound(rw, r)
				return
			}
			h(rw, r)
		})
	}
	w.tls = httptest.NewTLSServer(handler("https"))
	w.plain = httptest.NewServer(handler("http"))
	t.Cleanup(func() { w.tls.Close(); w.plain.Close() })
	return w
}

// checker returns a Checker whose fetches are signed and reach the test
// servers for example.com; any other address is refused.
func (w *web) checker(t *testing.T, res TXTResolver, https bool) *Checker {
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var target string
		switch {
		case addr == "example.com:443" && https:
			target = w.tls.Listener.Addr().String()
		case addr == "example.com:80":
			target = w.plain.Listener.Addr().String()
		default:
			return nil, &net.OpError{Op: "dial", Net: network, Err: errors.New("connection refused")}
		}
		return (&net.Dialer{}).DialContext(ctx, network, target)
	}
	tr := NewTransport(dial)
	tr.TLSClientConfig = w.tls.Client().Transport.(*http.Transport).TLSClientConfig.Clone()
	t.Cleanup(tr.CloseIdleConnections)
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, err := webbotauth.NewSigner(webbotauth.NewKeyring(webbotauth.NewKey(priv, now)), webbotauth.SignerOptions{})
	if err != nil {
		t.Fatal(err)
	}
	client := NewHTTPClient(webbotauth.NewTransport(tr, signer, func() time.Time { return now }))
	return &Checker{Resolver: res, Client: client}
}

func text(s string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(s)) }
}

func TestCheck(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	tok := Token(secret, "example.com")
	nx := &net.DNSError{Err: "no such host", Name: "example.com", IsNotFound: true}
	for _, tc := range []struct {
		name     string
		res      fakeResolver
		noHTTPS  bool
		routes   map[string]http.HandlerFunc
		wantOK   bool
		wantKind string   // the proof that held
		details  []string // substrings of each attempt's detail, in order
		seen     []string // requests the site saw, in order
	}{{
		name:     "dns",
		res:      fakeResolver{recs: []string{"v=spf1 -all", "mapthenet-verification=" + tok}},
		wantOK:   true,
		wantKind: "dns",
		details:  []string{"TXT record mapthenet-verification=" + tok + " found"},
	}, {
		name:     "file over https",
		res:      fakeResolver{recs: []string{"v=spf1 -all", "mapthenet-verification=wrong"}},
		routes:   map[string]http.HandlerFunc{"https " + FilePath: text(tok + "\n")},
		wantOK:   true,
		wantKind: "file",
		details: []string{`TXT records found: ["v=spf1 -all", "mapthenet-verification=wrong"], none matches mapthenet-verification=` + tok,
			"https://example.com/.well-known/mapthenet-verification.txt holds the token"},
		seen: []string{"https " + FilePath + " signed"},
	}, {
		name:     "file over http when https refuses",
		res:      fakeResolver{err: nx},
		noHTTPS:  true,
		routes:   map[string]http.HandlerFunc{"http " + FilePath: text("# mapthenet\n" + tok + "\n")},
		wantOK:   true,
		wantKind: "file",
		details:  []string{"TXT lookup failed", "http://example.com/.well-known/mapthenet-verification.txt holds the token"},
		seen:     []string{"http " + FilePath + " signed"},
	}, {
		name: "meta tag after redirect to https",
		res:  fakeResolver{},
		routes: map[string]http.HandlerFunc{
			"https /": text(`<!doctype html><html><head><meta name="description" content="x">` +
				`<META NAME="MapTheNet-Verification" CONTENT="` + tok + `"></head><body>hi</body></html>`),
		},
		wantOK:   true,
		wantKind: "meta",
		details:  []string{"no TXT records on example.com", "https: 404; http: 404", "https://example.com/ has the meta tag"},
		seen:     []string{"https " + FilePath + " signed", "http " + FilePath + " signed", "https / signed"},
	}, {
		name: "nothing holds",
		res:  fakeResolver{err: nx},
		routes: map[string]http.HandlerFunc{
			"https /": text(`<html><head><title>home</title></head></html>`),
			"http /": func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "https://example.com/", http.StatusMovedPermanently)
			},
		},
		details: []string{"dns: TXT lookup failed: lookup example.com: no such host",
			"file: https: 404; http: 404",
			"meta: https: home page has no mapthenet-verification meta tag; http: home page has no mapthenet-verification meta tag"},
	}, {
		name: "wrong meta and file contents",
		res:  fakeResolver{recs: []string{}},
		routes: map[string]http.HandlerFunc{
			"https " + FilePath: text("not-the-token"),
			"http " + FilePath:  text("not-the-token"),
			"https /":           text(`<meta name="mapthenet-verification" content="old-token">`),
		},
		details: []string{"dns: no TXT records",
			`file: https: the file holds "not-the-token", not the token; http: the file holds "not-the-token", not the token`,
			`meta: https: mapthenet-verification meta tags found: ["old-token"], none matches; http: home page 404`},
	}, {
		name:    "redirect to another domain is not followed",
		res:     fakeResolver{},
		noHTTPS: true,
		routes: map[string]http.HandlerFunc{
			"http " + FilePath: func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, "http://attacker.example/token.txt", http.StatusFound)
			},
		},
		details: []string{"no TXT records", "file: https: cannot connect: connection refused; http: redirect to another domain (attacker.example)",
			"meta: https: cannot connect: connection refused; http: home page 404"},
	}, {
		name:    "token beyond the body cap",
		res:     fakeResolver{},
		noHTTPS: true,
		routes:  map[string]http.HandlerFunc{"http " + FilePath: text(strings.Repeat("#\n", 3000) + tok)},
		details: []string{"no TXT records", "http: the file holds", "meta:"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWeb(t)
			w.routes = tc.routes
			chk := w.checker(t, tc.res, !tc.noHTTPS)
			r := chk.Check(context.Background(), "example.com", tok)
			if r.Verified() != tc.wantOK {
				t.Errorf("verified = %v, want %v: %v", r.Verified(), tc.wantOK, r.Attempts)
			}
			if tc.wantOK && !strings.HasPrefix(r.Proof(), tc.wantKind+": ") {
				t.Errorf("proof %q, want kind %s", r.Proof(), tc.wantKind)
			}
			if len(r.Attempts) != len(tc.details) {
				t.Fatalf("attempts %v, want %d", r.Attempts, len(tc.details))
			}
			for i, d := range tc.details {
				if !strings.Contains(r.Attempts[i].String(), d) {
					t.Errorf("attempt %d: %q, want it to contain %q", i, r.Attempts[i].String(), d)
				}
			}
			if tc.seen != nil {
				w.mu.Lock()
				if got := strings.Join(w.seen, ","); got != strings.Join(tc.seen, ",") {
					t.Errorf("site saw %s, want %s", got, strings.Join(tc.seen, ","))
				}
				w.mu.Unlock()
			}
		})
	}
}

func TestVerifyAndForce(t *testing.T) {
	secret := []byte("0123456789abcdef0123456789abcdef")
	tok := Token(secret, "example.com")
	t.Run("proven", func(t *testing.T) {
		rm := &fakeRemover{}
		chk := &Checker{Resolver: fakeResolver{recs: []string{"mapthenet-verification=" + tok}}}
		res, err := Verify(context.Background(), "example.com", secret, chk, rm, now, nil)
		if err != nil || !res.Verified() {
			t.Fatalf("Verify: %v %v", res, err)
		}
		want := "example.com|" + VerifiedReason + "|dns: TXT mapthenet-verification=" + tok + " on example.com|2026-12-02T12:00:00Z"
		if len(rm.calls) != 1 || rm.calls[0] != want {
			t.Errorf("removals %q, want %q", rm.calls, want)
		}
	})
	t.Run("not proven removes nothing", func(t *testing.T) {
		rm := &fakeRemover{}
		// The token of another data directory does not count.
		chk := &Checker{Resolver: fakeResolver{recs: []string{"mapthenet-verification=" + Token([]byte("another secret!!"), "example.com")}}}
		res, err := Verify(context.Background(), "example.com", secret, chk, rm, now, nil)
		if !errors.Is(err, ErrNotProven) || res.Verified() || len(rm.calls) != 0 {
			t.Errorf("Verify: %v, removals %v", err, rm.calls)
		}
		if len(res.Attempts) != 3 || !strings.Contains(res.Attempts[1].Detail, "no HTTP client") {
			t.Errorf("attempts %v", res.Attempts)
		}
	})
	t.Run("force", func(t *testing.T) {
		rm := &fakeRemover{}
		if err := Force("example.com", "", rm, now, nil); err == nil || len(rm.calls) != 0 {
			t.Errorf("Force without reason: %v", err)
		}
		if err := Force("example.com", "owner wrote from admin@example.com", rm, now, nil); err != nil {
			t.Fatal(err)
		}
		if want := "example.com|owner wrote from admin@example.com|none: forced by the operator|2026-12-02T12:00:00Z"; rm.calls[0] != want {
			t.Errorf("removal %q", rm.calls[0])
		}
	})
}

func FuzzMetaContents(f *testing.F) {
	for _, s := range []string{
		`<meta name="mapthenet-verification" content="abc">`,
		`<meta name=mapthenet-verification content=abc/>`,
		`<meta content="x" name="MAPTHENET-VERIFICATION"`,
		`<meta name="mapthenet-verification">`, `<<meta`, "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_ = metaContents([]byte(s)) // must not panic or hang
	})
}
