package webbotauth_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

var update = flag.Bool("update", false, "rewrite golden files")

// verifyDirectory checks every signature of a directory response from RFC
// 9421's rules, independently of the package.
func verifyDirectory(t *testing.T, authority string, h http.Header, body []byte, now time.Time) {
	t.Helper()
	sum := sha256.Sum256(body)
	digest := "sha-256=:" + base64.StdEncoding.EncodeToString(sum[:]) + ":"
	if got := h.Get("Content-Digest"); got != digest {
		t.Errorf("Content-Digest %s, want %s", got, digest)
	}
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	pubs := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if _, ok := k["d"]; ok {
			t.Fatal("directory publishes a private key")
		}
		x, _ := base64.RawURLEncoding.DecodeString(k["x"])
		if k["kid"] != webbotauth.Thumbprint(x) {
			t.Errorf("kid %s is not the thumbprint", k["kid"])
		}
		pubs[k["kid"]] = x
	}
	inputs, err := parseDictionary(h.Get("Signature-Input"))
	if err != nil {
		t.Fatal(err)
	}
	sigs, err := parseDictionary(h.Get("Signature"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) != len(set.Keys) || len(sigs) != len(set.Keys) {
		t.Fatalf("%d keys, %d inputs, %d signatures", len(set.Keys), len(inputs), len(sigs))
	}
	for i, in := range inputs {
		if want := "binding" + string(rune('0'+i)); in.key != want || sigs[i].key != want {
			t.Errorf("label %s / %s, want %s", in.key, sigs[i].key, want)
		}
		tag, _ := in.val.param("tag")
		kid, _ := in.val.param("keyid")
		created, _ := in.val.param("created")
		expires, _ := in.val.param("expires")
		if tag.str != "http-message-signatures-directory" || created.num != now.Unix() || expires.num != now.Add(7*24*time.Hour).Unix() {
			t.Errorf("params %s", in.val.serialize())
		}
		if got := in.val.inner; len(got) != 2 || got[0].serialize() != `"@authority";req` || got[1].serialize() != `"content-digest"` {
			t.Errorf("components %s", in.val.serialize())
		}
		base := `"@authority";req: ` + authority + "\n" + `"content-digest": ` + digest + "\n" + `"@signature-params": ` + in.val.serialize()
		if !ed25519.Verify(pubs[kid.str], []byte(base), sigs[i].val.bytes) {
			t.Errorf("%s: signature does not verify over\n%s", in.key, base)
		}
	}
}

func TestHandler(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	dir := t.TempDir()
	if _, err := webbotauth.Init(dir, now.Add(-48*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := webbotauth.Rotate(dir, now.Add(-time.Hour)); err != nil { // two keys published
		t.Fatal(err)
	}
	srv := httptest.NewServer(webbotauth.NewHandler(webbotauth.HandlerOptions{
		Keys:    func() (*webbotauth.Keyring, error) { return webbotauth.Load(dir) },
		Clock:   func() time.Time { return now },
		Contact: "bot@mapthenet.example",
	}))
	defer srv.Close()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	defer client.CloseIdleConnections()
	do := func(method, path string, hdr map[string]string) (*http.Response, []byte) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}

	resp, body := do("GET", webbotauth.DirectoryPath, nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/http-message-signatures-directory+json" ||
		resp.Header.Get("Cache-Control") != "max-age=86400" || resp.Header.Get("Etag") == "" {
		t.Fatalf("GET directory: %d %v", resp.StatusCode, resp.Header)
	}
	verifyDirectory(t, strings.TrimPrefix(srv.URL, "http://"), resp.Header, body, now)
	if n := strings.Count(string(body), `"kty"`); n != 2 {
		t.Errorf("%d keys published, want 2 (old and new during a rotation)", n)
	}

	head, hb := do("HEAD", webbotauth.DirectoryPath, nil)
	if head.StatusCode != 200 || len(hb) != 0 || head.Header.Get("Signature") != resp.Header.Get("Signature") {
		t.Errorf("HEAD: %d, %d body bytes", head.StatusCode, len(hb))
	}
	nm, _ := do("GET", webbotauth.DirectoryPath, map[string]string{"If-None-Match": resp.Header.Get("Etag")})
	if nm.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d", nm.StatusCode)
	}
	if p, _ := do("POST", webbotauth.DirectoryPath, nil); p.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", p.StatusCode)
	}
	for _, path := range []string{"/", "/bot"} {
		r, b := do("GET", path, nil)
		if r.StatusCode != 200 || !strings.Contains(string(b), "User-agent: MapTheNetBot") ||
			!strings.Contains(string(b), "mapthenet-verification") || !strings.Contains(string(b), "bot@mapthenet.example") {
			t.Errorf("GET %s: %d\n%s", path, r.StatusCode, b)
		}
	}
	if r, _ := do("GET", "/nothing", nil); r.StatusCode != 404 {
		t.Errorf("GET /nothing: %d", r.StatusCode)
	}
}

// With an explicit authority, the directory is signed for it whatever Host
// the request carried.
func TestHandlerAuthorityOverride(t *testing.T) {
	now := time.Unix(1735689600, 0)
	kr := webbotauth.NewKeyring(webbotauth.NewKey(testPrivateKey(t), now))
	h := webbotauth.NewHandler(webbotauth.HandlerOptions{
		Keys:      func() (*webbotauth.Keyring, error) { return kr, nil },
		Clock:     func() time.Time { return now },
		Authority: "www.mapthenet.org",
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "http://127.0.0.1:1234"+webbotauth.DirectoryPath, nil))
	verifyDirectory(t, "www.mapthenet.org", rec.Header(), rec.Body.Bytes(), now)
}

func TestWriteMessage(t *testing.T) {
	now := time.Unix(1735689600, 0)
	kr := webbotauth.NewKeyring(webbotauth.NewKey(testPrivateKey(t), now))
	status, h, body := webbotauth.DirectoryResponse(kr, "signature-agent.test", now)
	var b strings.Builder
	if err := webbotauth.WriteMessage(&b, status, h, body); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "directory-message.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if b.String() != string(want) {
		t.Errorf("message:\n%s\nwant (%s, rewrite with -update):\n%s", b.String(), golden, want)
	}
	if !strings.HasSuffix(b.String(), "\r\n\r\n"+string(body)) {
		t.Errorf("message does not end with a blank line and the body")
	}
}

// The bot page names the operator's own crawler when told (keys serve
// takes the token and user agent from the data directory's config).
func TestHandlerBotPageNamesOperator(t *testing.T) {
	kr := webbotauth.NewKeyring(webbotauth.NewKey(testPrivateKey(t), time.Unix(1735689600, 0)))
	h := webbotauth.NewHandler(webbotauth.HandlerOptions{
		Keys:  func() (*webbotauth.Keyring, error) { return kr, nil },
		Token: "ExampleBot", UserAgent: "ExampleBot/1.0 (+https://crawler.example.org/bot?a=1&b=<2>)",
		Contact: "crawler@example.org",
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/bot", nil))
	body := rec.Body.String()
	for _, want := range []string{"<title>ExampleBot</title>", "User-agent: ExampleBot\nDisallow: /",
		"<code>ExampleBot/1.0 (&#43;https://crawler.example.org/bot?a=1&amp;b=&lt;2&gt;)</code>", "mailto:crawler@example.org"} {
		if !strings.Contains(body, want) {
			t.Errorf("bot page lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "MapTheNetBot") {
		t.Errorf("bot page still names MapTheNetBot:\n%s", body)
	}
}
