package webbotauth_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

// The crawler's use: load the keys (creating the first one), and make
// signing a layer of the HTTP client, so that every request and every
// redirect hop carries a fresh signature.
func Example() {
	dir, _ := os.MkdirTemp("", "keys")
	defer os.RemoveAll(dir)
	now := time.Now()
	kr, created, err := webbotauth.LoadOrCreate(filepath.Join(dir, "keys"), now)
	if err != nil {
		fmt.Println(err)
		return
	}
	signer, err := webbotauth.NewSigner(kr, webbotauth.SignerOptions{}) // form A, our directory URL
	if err != nil {
		fmt.Println(err)
		return
	}
	client := &http.Client{Transport: webbotauth.NewTransport(http.DefaultTransport, signer, time.Now)}
	_ = client // client.Get("https://example.com/robots.txt") is signed

	req, _ := http.NewRequest("GET", "https://example.com/robots.txt", nil)
	if err := signer.Sign(req, now); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("created:", created)
	fmt.Println("Signature-Agent:", req.Header.Get("Signature-Agent"))
	// Output:
	// created: true
	// Signature-Agent: sig1="https://www.mapthenet.org/.well-known/http-message-signatures-directory"
}
