package removal

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// SecretFile is the secret's file name in the keys directory.
const SecretFile = "removal.secret"

// ErrNoSecret: no token was ever issued from this data directory.
var ErrNoSecret = errors.New("no removal secret")

// Token is the verification token of a domain (normalised by the caller):
// the first 128 bits of HMAC-SHA256(secret, domain), in hex, so it is safe in
// DNS, a file and HTML alike.
func Token(secret []byte, domain string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("mapthenet-removal\x00" + domain))
	return hex.EncodeToString(m.Sum(nil)[:16])
}

// LoadSecret reads the secret from keysDir; ErrNoSecret when there is none.
func LoadSecret(keysDir string) ([]byte, error) {
	path := filepath.Join(keysDir, SecretFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("removal: %w in %s: issue a token first (mapthenet remove token DOMAIN)", ErrNoSecret, keysDir)
	}
	if err != nil {
		return nil, fmt.Errorf("removal: %w", err)
	}
	secret, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(secret) < 16 {
		return nil, fmt.Errorf("removal: %s: want at least 16 bytes in hex", path)
	}
	return secret, nil
}

// LoadOrCreateSecret reads the secret, creating it (32 random bytes, mode
// 0600, directory 0700) on first use. Creation never overwrites: two
// processes racing get the same secret.
func LoadOrCreateSecret(keysDir string) ([]byte, error) {
	secret, err := LoadSecret(keysDir)
	if !errors.Is(err, ErrNoSecret) {
		return secret, err
	}
	if err := os.MkdirAll(keysDir, 0o700); err != nil {
		return nil, fmt.Errorf("removal: %w", err)
	}
	secret = make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("removal: %w", err)
	}
	tmp, err := os.CreateTemp(keysDir, ".tmp-secret-*") // mode 0600
	if err != nil {
		return nil, fmt.Errorf("removal: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.WriteString(hex.EncodeToString(secret) + "\n")
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("removal: %w", err)
	}
	if err := os.Link(tmp.Name(), filepath.Join(keysDir, SecretFile)); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("removal: %w", err)
	}
	return LoadSecret(keysDir) // the winner's secret, if another process raced us
}
