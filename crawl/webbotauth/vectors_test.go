package webbotauth

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Test data of notes/web-bot-auth.md section 8 (public test keys: tests only).
const (
	testKeyPEM = `-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
-----END PRIVATE KEY-----
`
	testKeyID = "poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U"
)

// testKey is RFC 9421 B.1.4 test-key-ed25519.
func testKey(t testing.TB) ed25519.PrivateKey {
	t.Helper()
	blk, _ := pem.Decode([]byte(testKeyPEM))
	k, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return k.(ed25519.PrivateKey)
}

func mustB64(t testing.TB, s string) []byte {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestThumbprint(t *testing.T) {
	for _, tc := range []struct{ name, x, want string }{
		{"RFC 8037 A.3", "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k"},
		{"RFC 9421 B.1.4", "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs", testKeyID},
	} {
		x, err := b64url.DecodeString(tc.x)
		if err != nil {
			t.Fatal(err)
		}
		if got := Thumbprint(ed25519.PublicKey(x)); got != tc.want {
			t.Errorf("%s: Thumbprint = %s, want %s", tc.name, got, tc.want)
		}
	}
	// The B.1.4 private key's public half is the x above.
	if got := b64url.EncodeToString(testKey(t).Public().(ed25519.PublicKey)); got != "JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs" {
		t.Errorf("B.1.4 public key x = %s", got)
	}
}

// RFC 9421 B.2.6: the base built from the B.2 message, byte for byte, and
// the signature.
func TestRFC9421B26(t *testing.T) {
	raw := "POST /foo?param=Value&Pet=dog HTTP/1.1\r\n" +
		"Host: example.com\r\n" +
		"Date: Tue, 20 Apr 2021 02:07:55 GMT\r\n" +
		"Content-Type: application/json\r\n" +
		"Content-Digest: sha-512=:WZDPaVn/7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:\r\n" +
		"Content-Length: 18\r\n" +
		"\r\n" +
		`{"hello": "world"}`
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
	if err != nil {
		t.Fatal(err)
	}
	comps := []component{{name: "date"}, {name: "@method"}, {name: "@path"}, {name: "@authority"},
		{name: "content-type"}, {name: "content-length"}}
	params := []param{{"created", int64(1618884473)}, {"keyid", "test-key-ed25519"}}
	wantInput := `("date" "@method" "@path" "@authority" "content-type" "content-length");created=1618884473;keyid="test-key-ed25519"`
	wantBase := `"date": Tue, 20 Apr 2021 02:07:55 GMT
"@method": POST
"@path": /foo
"@authority": example.com
"content-type": application/json
"content-length": 18
"@signature-params": ` + wantInput
	input, err := signatureParams(comps, params)
	if err != nil || input != wantInput {
		t.Fatalf("signature params = %q, %v\nwant %q", input, err, wantInput)
	}
	base, err := signatureBase(comps, input, requestResolver(req, nil))
	if err != nil {
		t.Fatal(err)
	}
	if string(base) != wantBase {
		t.Fatalf("base:\n%s\nwant:\n%s", base, wantBase)
	}
	_, sig, err := sign(testKey(t), comps, params, requestResolver(req, nil))
	if err != nil {
		t.Fatal(err)
	}
	if got := "sig-b26=" + sfBytes(sig); got != "sig-b26=:wqcAqbmYJ2ji2glfAMaRy4gruYYnx2nEFN2HN6jrnDnQCK1u02Gb04v9EDgwUPiu4A0w6vuQv5lIp5WPpBKRCw==:" {
		t.Errorf("Signature: %s", got)
	}
}

// The notes' form-A worked example (section 2), byte for byte. It uses a
// one-hour window; ours is five minutes (TestSignHeaders).
func TestFormAWorkedExample(t *testing.T) {
	created := time.Unix(1735689600, 0)
	nonce := mustB64(t, "f9npeRprRY+t1xxa/Gd5cnJ+QIkmAYZd1jhP8SQcpYEBZV+HTurUVBVwmqaUjeVUnf+KNrFKJFDePNF2Hj6kHA==")
	s, err := NewSigner(NewKeyring(NewKey(testKey(t), created)), SignerOptions{
		AgentURL: "https://crawler.example/.well-known/http-message-signatures-directory",
		Rand:     bytes.NewReader(nonce),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.lifetime = time.Hour
	req, _ := http.NewRequest("GET", "https://example.com/robots.txt", nil)
	if err := s.Sign(req, created); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"Signature-Agent": `sig1="https://crawler.example/.well-known/http-message-signatures-directory"`,
		"Signature-Input": `sig1=("@method" "@authority" "@path" "signature-agent";key="sig1");created=1735689600;expires=1735693200;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";nonce="f9npeRprRY+t1xxa/Gd5cnJ+QIkmAYZd1jhP8SQcpYEBZV+HTurUVBVwmqaUjeVUnf+KNrFKJFDePNF2Hj6kHA==";tag="web-bot-auth"`,
		"Signature":       `sig1=:qjFjrJyMuZc1TTtFRhFJTv167MRaBrT3Cc8T8czgvJ1ZByZc1apCvkXHzFGvBjKYnr8EmUmWVvfwijnE9ahoCA==:`,
	}
	for k, v := range want {
		if got := req.Header.Get(k); got != v {
			t.Errorf("%s:\n got %s\nwant %s", k, got, v)
		}
	}
}

// draft-ietf-webbotauth-httpsig-protocol-01 Appendix E.2.1 and E.2.2.
func TestDraftRequestVectors(t *testing.T) {
	for _, tc := range []struct {
		name      string
		agentHdr  string
		agent     component
		members   map[string]map[string]string
		expires   int64
		nonce     string
		wantInput string
		wantSig   string
	}{{
		name:      "E.2.1 dictionary",
		agentHdr:  `agent2="https://signature-agent.test"`,
		agent:     component{name: "signature-agent", key: "agent2"},
		members:   map[string]map[string]string{"signature-agent": {"agent2": `"https://signature-agent.test"`}},
		expires:   4889289600,
		nonce:     "n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA==",
		wantInput: `("@authority" "signature-agent";key="agent2");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=4889289600;nonce="n9p433xm+NJ3ph3upfBIGmsuwHw387YV7Q/F+6BSpGCVjYCqQw6rznNA8PVVLySrAWsv0hQtFioQb6E1YsauiA==";tag="web-bot-auth"`,
		wantSig:   "RdNFx5Bj6au3YgAMQL/RzmUlZE8QZLIaXGRpw985hWnwPfMxT228NMk6ehRS1PSl4e8PhbNZACSanGdhEwYCCg==",
	}, {
		name:      "E.2.2 string",
		agentHdr:  `"https://signature-agent.test"`,
		agent:     component{name: "signature-agent"},
		expires:   1735693200,
		nonce:     "e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==",
		wantInput: `("@authority" "signature-agent");created=1735689600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";alg="ed25519";expires=1735693200;nonce="e8N7S2MFd/qrd6T2R3tdfAuuANngKI7LFtKYI/vowzk4lAZYadIX6wW25MwG7DCT9RUKAJ0qVkU0mEeLElW1qg==";tag="web-bot-auth"`,
		wantSig:   "jdq0SqOwHdyHr9+r5jw3iYZH6aNGKijYp/EstF4RQTQdi5N5YYKrD+mCT1HA1nZDsi6nJKuHxUi/5Syp3rLWBA==",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "https://example.com/", nil)
			req.Header.Set("Signature-Agent", tc.agentHdr)
			comps := []component{{name: "@authority"}, tc.agent}
			params := []param{{"created", int64(1735689600)}, {"keyid", testKeyID}, {"alg", "ed25519"},
				{"expires", tc.expires}, {"nonce", tc.nonce}, {"tag", "web-bot-auth"}}
			input, sig, err := sign(testKey(t), comps, params, requestResolver(req, tc.members))
			if err != nil {
				t.Fatal(err)
			}
			if input != tc.wantInput {
				t.Errorf("Signature-Input member:\n got %s\nwant %s", input, tc.wantInput)
			}
			base, _ := signatureBase(comps, input, requestResolver(req, tc.members))
			wantBase := `"@authority": example.com` + "\n" + tc.agent.String() + `: "https://signature-agent.test"` +
				"\n" + `"@signature-params": ` + tc.wantInput
			if string(base) != wantBase {
				t.Errorf("base:\n%s\nwant:\n%s", base, wantBase)
			}
			if got := base64.StdEncoding.EncodeToString(sig); got != tc.wantSig {
				t.Errorf("signature %s, want %s", got, tc.wantSig)
			}
		})
	}
}

// draft Appendix E.2.3: the signed directory response, byte for byte.
func TestDraftDirectoryVector(t *testing.T) {
	k := NewKey(testKey(t), time.Unix(0, 0))
	h, body, err := directory([]*Key{k}, "signature-agent.test", time.Unix(1735689600, 0), time.Unix(4889289600, 0),
		func(int) string { return "binding" })
	if err != nil {
		t.Fatal(err)
	}
	wantBody := `{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U","x":"JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs","use":"sig"}]}`
	if string(body) != wantBody {
		t.Errorf("body:\n got %s\nwant %s", body, wantBody)
	}
	for k, v := range map[string]string{
		"Content-Digest":  "sha-256=:CADMT2aBdV/rqQr/NIru64ERQkCobVvllA4V0fLFDu0=:",
		"Signature-Input": `binding=("@authority";req "content-digest");created=1735689600;expires=4889289600;keyid="poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U";tag="http-message-signatures-directory"`,
		"Signature":       "binding=:l6P8R67tm3kujAxbHWio7ll01qrEZ0dKD/WWlGhNYEmTnFZM8Wt0VQ9zqGfvo7T/UMkBxsigzChM1Gpz7gOVBg==:",
		"Content-Type":    "application/http-message-signatures-directory+json",
		"Cache-Control":   "max-age=86400",
	} {
		if got := h.Get(k); got != v {
			t.Errorf("%s:\n got %s\nwant %s", k, got, v)
		}
	}
}

func TestAuthorityAndPath(t *testing.T) {
	for _, tc := range []struct{ url, host, authority, path string }{
		{"https://B.example:443/x", "", "b.example", "/x"},
		{"https://b.example:8443/", "", "b.example:8443", "/"},
		{"http://Example.COM:80", "", "example.com", "/"},
		{"http://example.com:443/a%2Fb?q=1", "", "example.com:443", "/a%2Fb"},
		{"https://[2001:db8::1]:443/p", "", "[2001:db8::1]", "/p"},
		{"https://[2001:db8::1]:8443/p", "", "[2001:db8::1]:8443", "/p"},
		{"https://127.0.0.1:8443/", "Site.Example", "site.example", "/"},
		{"https://example.com/caf%C3%A9/", "", "example.com", "/caf%C3%A9/"},
	} {
		req, err := http.NewRequest("GET", tc.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = tc.host
		if got := RequestAuthority(req); got != tc.authority {
			t.Errorf("%s host %q: @authority %q, want %q", tc.url, tc.host, got, tc.authority)
		}
		if got := requestPath(req); got != tc.path {
			t.Errorf("%s: @path %q, want %q", tc.url, got, tc.path)
		}
	}
}

func TestSFStringRejectsNonASCII(t *testing.T) {
	for _, s := range []string{"caf\u00e9", "a\nb", "tab\t"} {
		if _, err := sfString(s); err == nil {
			t.Errorf("sfString(%q) accepted", s)
		}
	}
	if got, _ := sfString(`a"b\c`); got != `"a\"b\\c"` {
		t.Errorf("escaping: %s", got)
	}
}

// The directory handler signs for whatever Host a request carries: outside
// input. It must never panic, and must answer 200 with a signature or 500.
func FuzzDirectoryAuthority(f *testing.F) {
	for _, s := range []string{"example.com", "Example.COM:443", "[::1]:8443", "caf\u00e9.example", "a\"b", "", ":", "[::1"} {
		f.Add(s)
	}
	kr := NewKeyring(NewKey(testKey(f), time.Unix(0, 0)))
	f.Fuzz(func(t *testing.T, host string) {
		a := Authority("https", host)
		status, h, _ := DirectoryResponse(kr, a, time.Unix(1735689600, 0))
		if status != 200 && status != 500 {
			t.Fatalf("status %d", status)
		}
		if status == 200 && h.Get("Signature") == "" {
			t.Fatal("200 without a signature")
		}
	})
}
