package webbotauth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

// BenchmarkSign: one request signature (nonce from crypto/rand, base, Ed25519).
func BenchmarkSign(b *testing.B) {
	now := time.Unix(1735689600, 0)
	s, err := webbotauth.NewSigner(webbotauth.NewKeyring(webbotauth.NewKey(testPrivateKey(b), now)), webbotauth.SignerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	req, _ := http.NewRequest("GET", "https://example.com/some/page.html", nil)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Sign(req, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDirectoryResponse: the signed directory of two keys, as served
// on every request by keys serve.
func BenchmarkDirectoryResponse(b *testing.B) {
	now := time.Unix(1735689600, 0)
	k1 := webbotauth.NewKey(testPrivateKey(b), now)
	k2 := webbotauth.NewKey(testPrivateKey(b), now) // same key twice: cost is what matters
	kr := webbotauth.NewKeyring(k1, k2)
	b.ReportAllocs()
	for b.Loop() {
		webbotauth.DirectoryResponse(kr, "www.mapthenet.org", now)
	}
}
