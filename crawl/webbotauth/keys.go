package webbotauth

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Timing of signatures, the directory and rotations (see the package doc).
const (
	// SignatureLifetime is expires - created of every request signature
	// (notes section 9.4).
	SignatureLifetime = 5 * time.Minute
	// DirectoryMaxAge is the directory's Cache-Control max-age.
	DirectoryMaxAge = 24 * time.Hour
	// PublicationDelay is how long a new key is published before it signs.
	PublicationDelay = DirectoryMaxAge
	// DirectoryProofLifetime is expires - created of the directory's own
	// signatures (notes section 3: 7 days, re-signed daily).
	DirectoryProofLifetime = 7 * 24 * time.Hour
)

// KeyFileExt names key files in the keys directory: <keyid>.jwk.
const KeyFileExt = ".jwk"

var (
	// ErrKeyExists: Init found a key already; it never overwrites one.
	ErrKeyExists = errors.New("a signing key already exists")
	// ErrNoKey: the directory holds no key.
	ErrNoKey = errors.New("no signing key")
	// ErrRotationPending: a new key is still waiting for its switch time.
	ErrRotationPending = errors.New("a rotation is already pending")
)

// testKeyIDs are the thumbprints of the published test keys (RFC 9421
// B.1.4, RFC 8037 A): verifiers should reject them, so Load refuses them
// (draft-ietf-webbotauth-httpsig-protocol-01 §6.8).
var testKeyIDs = map[string]bool{
	"poqkLGiymh_W0uP6PZFw-dvez3QJT5SolqXBCW38r0U": true,
	"kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k": true,
}

// Key is one Ed25519 signing key and its schedule.
type Key struct {
	ID        string // RFC 7638 thumbprint: the keyid
	Private   ed25519.PrivateKey
	Created   time.Time
	NotBefore time.Time // signs from this time on
	SignUntil time.Time // signs before this time; zero: no end set
	Retire    time.Time // published before this time; zero: no end set
	Path      string    // the file it was read from or written to; "" if none
}

// NewKey wraps a private key that signs and is published from created on.
func NewKey(priv ed25519.PrivateKey, created time.Time) *Key {
	return &Key{
		ID:        Thumbprint(priv.Public().(ed25519.PublicKey)),
		Private:   priv,
		Created:   created.UTC(),
		NotBefore: created.UTC(),
	}
}

// Public is the key's public half.
func (k *Key) Public() ed25519.PublicKey { return k.Private.Public().(ed25519.PublicKey) }

// SignsAt says whether the key may make a signature at t.
func (k *Key) SignsAt(t time.Time) bool {
	return !t.Before(k.NotBefore) && (k.SignUntil.IsZero() || t.Before(k.SignUntil))
}

// PublishedAt says whether the key belongs in the directory at t. A key is
// published from its creation (before it signs) until it retires.
func (k *Key) PublishedAt(t time.Time) bool {
	return k.Retire.IsZero() || t.Before(k.Retire)
}

// Keyring is a set of keys, oldest first. It is not changed after it is made,
// so it is safe for concurrent use.
type Keyring struct {
	keys []*Key
}

// NewKeyring makes a keyring of keys (tests, and Load).
func NewKeyring(keys ...*Key) *Keyring {
	ks := append([]*Key(nil), keys...)
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].NotBefore.Before(ks[j].NotBefore) })
	return &Keyring{keys: ks}
}

// Keys lists every key, oldest first.
func (kr *Keyring) Keys() []*Key { return append([]*Key(nil), kr.keys...) }

// Signing is the key that signs at now: of those allowed to sign then, the
// one that started signing last.
func (kr *Keyring) Signing(now time.Time) (*Key, error) {
	for i := len(kr.keys) - 1; i >= 0; i-- {
		if kr.keys[i].SignsAt(now) {
			return kr.keys[i], nil
		}
	}
	return nil, fmt.Errorf("%w at %s (run mapthenet keys init, or keys rotate)", ErrNoKey, now.UTC().Format(time.RFC3339))
}

// Published lists the keys the directory shows at now, oldest first.
func (kr *Keyring) Published(now time.Time) []*Key {
	var out []*Key
	for _, k := range kr.keys {
		if k.PublishedAt(now) {
			out = append(out, k)
		}
	}
	return out
}

// keyFile is the on-disk form: an OKP JWK with its private part d (RFC 8037
// §2) plus our schedule. Times are RFC 3339, UTC.
type keyFile struct {
	Kty       string `json:"kty"`
	Crv       string `json:"crv"`
	Kid       string `json:"kid"`
	X         string `json:"x"`
	D         string `json:"d"`
	Created   string `json:"created"`
	NotBefore string `json:"not_before"`
	SignUntil string `json:"sign_until,omitempty"`
	Retire    string `json:"retire,omitempty"`
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func parseTime(field, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %v", field, err)
	}
	return t.UTC(), nil
}

func encodeKey(k *Key) ([]byte, error) {
	kf := keyFile{
		Kty: "OKP", Crv: "Ed25519", Kid: k.ID,
		X:         b64url.EncodeToString(k.Public()),
		D:         b64url.EncodeToString(k.Private.Seed()),
		Created:   fmtTime(k.Created),
		NotBefore: fmtTime(k.NotBefore),
		SignUntil: fmtTime(k.SignUntil),
		Retire:    fmtTime(k.Retire),
	}
	b, err := json.MarshalIndent(kf, "", "  ")
	return append(b, '\n'), err
}

func decodeKey(raw []byte) (*Key, error) {
	var kf keyFile
	if err := json.Unmarshal(raw, &kf); err != nil {
		return nil, err
	}
	if kf.Kty != "OKP" || kf.Crv != "Ed25519" {
		return nil, fmt.Errorf("kty %q crv %q: want an OKP Ed25519 key", kf.Kty, kf.Crv)
	}
	seed, err := b64url.DecodeString(kf.D)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, errors.New("d: want 32 bytes of base64url")
	}
	k := &Key{Private: ed25519.NewKeyFromSeed(seed)}
	k.ID = Thumbprint(k.Public())
	if x := b64url.EncodeToString(k.Public()); kf.X != x {
		return nil, errors.New("x does not match the private key d")
	}
	if kf.Kid != "" && kf.Kid != k.ID {
		return nil, fmt.Errorf("kid %q is not the key's thumbprint %q", kf.Kid, k.ID)
	}
	for _, f := range []struct {
		name string
		s    string
		t    *time.Time
	}{{"created", kf.Created, &k.Created}, {"not_before", kf.NotBefore, &k.NotBefore},
		{"sign_until", kf.SignUntil, &k.SignUntil}, {"retire", kf.Retire, &k.Retire}} {
		if *f.t, err = parseTime(f.name, f.s); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// keyPaths lists the key files in dir; a missing dir has none.
func keyPaths(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), KeyFileExt) && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// Load reads every key in dir. A key file others can read is refused, as ssh
// does: the key is the crawler's identity. So are the published test keys.
func Load(dir string) (*Keyring, error) {
	paths, err := keyPaths(dir)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	var keys []*Key
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
		if fi.Mode().Perm()&0o077 != 0 {
			return nil, fmt.Errorf("keys: %s is open to other users (mode %04o): chmod 600 it", p, fi.Mode().Perm())
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
		k, err := decodeKey(raw)
		if err != nil {
			return nil, fmt.Errorf("keys: %s: %v", p, err)
		}
		if testKeyIDs[k.ID] {
			return nil, fmt.Errorf("keys: %s is a published test key (RFC 9421 B.1.4 / RFC 8037 A): never use it outside tests", p)
		}
		if want := k.ID + KeyFileExt; filepath.Base(p) != want {
			return nil, fmt.Errorf("keys: %s holds key %s: rename it to %s", p, k.ID, want)
		}
		k.Path = p
		keys = append(keys, k)
	}
	return NewKeyring(keys...), nil
}

// ensureDir makes dir with mode 0700, tightening it if it exists wider.
func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// writeKey writes k to dir/<keyid>.jwk with mode 0600 through a temporary
// file, so a crash never leaves half a key. With replace false it refuses to
// overwrite (os.Link fails on an existing name, atomically).
func writeKey(dir string, k *Key, replace bool) error {
	raw, err := encodeKey(k)
	if err != nil {
		return err
	}
	final := filepath.Join(dir, k.ID+KeyFileExt)
	tmp, err := os.CreateTemp(dir, ".tmp-key-*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(raw); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if replace {
		err = os.Rename(tmp.Name(), final)
	} else {
		err = os.Link(tmp.Name(), final)
	}
	if err != nil {
		return err
	}
	k.Path = final
	if d, err := os.Open(dir); err == nil { // make the new name durable
		_ = d.Sync()
		d.Close()
	}
	return nil
}

func generate(now time.Time) (*Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("keys: generate: %w", err)
	}
	return NewKey(priv, now), nil
}

// Init creates the first key in dir, signing from now on. It refuses to run
// when dir already holds a key (ErrKeyExists): replacing a key is Rotate's
// job, which keeps the old one published while its signatures live.
func Init(dir string, now time.Time) (*Key, error) {
	if err := ensureDir(dir); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	paths, err := keyPaths(dir)
	if err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	if len(paths) > 0 {
		return nil, fmt.Errorf("keys: %w in %s (%s); use keys rotate to replace it", ErrKeyExists, dir, filepath.Base(paths[0]))
	}
	k, err := generate(now)
	if err != nil {
		return nil, err
	}
	if err := writeKey(dir, k, false); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	return k, nil
}

// LoadOrCreate loads the keys in dir, creating the first one when there is
// none (created reports that, so the crawler can say so).
func LoadOrCreate(dir string, now time.Time) (kr *Keyring, created bool, err error) {
	kr, err = Load(dir)
	if err != nil {
		return nil, false, err
	}
	if len(kr.keys) > 0 {
		return kr, false, nil
	}
	if _, err := Init(dir, now); err != nil {
		return nil, false, err
	}
	kr, err = Load(dir)
	return kr, true, err
}

// Rotation reports what Rotate did.
type Rotation struct {
	New      *Key      // published now, signs from Switch
	Switch   time.Time // when New takes over signing
	Retiring []*Key    // stop signing at Switch, unpublished at their Retire
	Removed  []string  // files of keys retired before now, deleted
}

// Rotate adds a new key to dir following the rule in the package doc.
func Rotate(dir string, now time.Time) (*Rotation, error) {
	kr, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if len(kr.keys) == 0 {
		return nil, fmt.Errorf("keys: %w in %s: run mapthenet keys init first", ErrNoKey, dir)
	}
	for _, k := range kr.keys {
		if k.NotBefore.After(now) {
			return nil, fmt.Errorf("keys: %w: key %s signs from %s; rotate after that",
				ErrRotationPending, k.ID, k.NotBefore.Format(time.RFC3339))
		}
	}
	r := &Rotation{}
	// Retired keys first, so a failure below leaves no stale private key.
	for _, k := range kr.keys {
		if !k.PublishedAt(now) {
			if err := os.Remove(k.Path); err != nil {
				return nil, fmt.Errorf("keys: remove retired key: %w", err)
			}
			r.Removed = append(r.Removed, k.Path)
		}
	}
	nk, err := generate(now)
	if err != nil {
		return nil, err
	}
	r.New, r.Switch = nk, now.UTC().Add(PublicationDelay)
	nk.NotBefore = r.Switch
	// The new key is written before the old ones are cut short: if we stop
	// half-way, the old key still signs and nothing is lost.
	if err := writeKey(dir, nk, false); err != nil {
		return nil, fmt.Errorf("keys: %w", err)
	}
	for _, k := range kr.keys {
		if !k.PublishedAt(now) || (!k.SignUntil.IsZero() && !k.SignUntil.After(r.Switch)) {
			continue
		}
		k.SignUntil = r.Switch
		k.Retire = r.Switch.Add(SignatureLifetime + DirectoryMaxAge)
		if err := writeKey(dir, k, true); err != nil {
			return nil, fmt.Errorf("keys: %w", err)
		}
		r.Retiring = append(r.Retiring, k)
	}
	return r, nil
}
