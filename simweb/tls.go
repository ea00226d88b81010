package simweb

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"runtime"
	"strings"
	"sync"
	"time"
)

// authority is a certificate authority made at start, minting one leaf
// certificate per server name on demand.
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	pem     []byte
	leafKey *ecdsa.PrivateKey // shared by every leaf: minting stays one signature

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// Certificates are valid from 2000 to 2099 so that tests replaying any
// --now date never meet an expired one.
var (
	notBefore = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	notAfter  = time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)
)

func newAuthority(name string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("simweb: CA key: %w", err)
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("simweb: leaf key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"mapthenet simweb"}},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("simweb: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("simweb: CA certificate: %w", err)
	}
	return &authority{
		cert: cert, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{},
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
	}, nil
}

// leaf returns (minting and caching) the certificate for a server name.
func (a *authority) leaf(name string) (*tls.Certificate, error) {
	name = strings.ToLower(name)
	a.mu.Lock()
	c := a.leaves[name]
	a.mu.Unlock()
	if c != nil {
		return c, nil
	}
	// Minted outside the lock: handshakes for different hosts sign in
	// parallel (two racing for one name both mint; one is kept).
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: name},
		DNSNames:     []string{name},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &a.leafKey.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("simweb: certificate for %s: %w", name, err)
	}
	c = &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: a.leafKey}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.leaves[name]; old != nil {
		return old, nil
	}
	a.leaves[name] = c
	return c, nil
}

// WarmCertificates mints every host's certificate now (in parallel), so
// that a crawl's first handshakes do not wait for them: minting is the test
// server's cost, and under the race detector it can outlast a short
// crawler timeout.
func (w *Web) WarmCertificates() error {
	var hosts []*host
	for _, s := range w.world.sites {
		hosts = append(hosts, s.hosts...)
	}
	var wg sync.WaitGroup
	errs := make([]error, runtime.GOMAXPROCS(0))
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := i; j < len(hosts); j += len(errs) {
				var err error
				switch hosts[j].tls {
				case tlsOK:
					_, err = w.ca.leaf(hosts[j].name)
				case tlsBadCert:
					_, err = w.rogue.leaf(hosts[j].name)
				}
				if err != nil {
					errs[i] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tlsConfig answers each handshake by the host's tlsMode: our CA's
// certificate, a rogue CA's (untrusted), or a failed handshake.
func (w *Web) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetCertificate: func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
			h := w.world.byHost[strings.ToLower(hello.ServerName)]
			if h == nil {
				return nil, errors.New("simweb: no site for this server name")
			}
			switch h.tls {
			case tlsFail:
				return nil, errors.New("simweb: this host has no TLS")
			case tlsBadCert:
				return w.rogue.leaf(h.name)
			}
			return w.ca.leaf(h.name)
		},
	}
}
