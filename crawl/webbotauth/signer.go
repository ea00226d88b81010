package webbotauth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// DefaultAgentURL is where our key directory is published: the value of
// Signature-Agent.
const DefaultAgentURL = "https://www.mapthenet.org/.well-known/http-message-signatures-directory"

// Label is the label of our request signatures.
const Label = "sig1"

// Tag is the tag of request signatures (verifiers discard other tags).
const Tag = "web-bot-auth"

// NonceSize is the number of random bytes in each nonce.
const NonceSize = 64

// AgentForm is how Signature-Agent is sent (notes section 9.1).
type AgentForm int

const (
	// FormDictionary (form A, the default, draft-ietf-...-01 §5.2.1):
	// Signature-Agent: sig1="<url>", covered as "signature-agent";key="sig1".
	FormDictionary AgentForm = iota
	// FormString (form C, the form Cloudflare's guide documents):
	// Signature-Agent: "<url>", covered as "signature-agent".
	FormString
)

// ParseAgentForm reads "dictionary" or "string" (configuration).
func ParseAgentForm(s string) (AgentForm, error) {
	switch s {
	case "dictionary", "":
		return FormDictionary, nil
	case "string":
		return FormString, nil
	}
	return 0, fmt.Errorf("signature-agent form %q: want dictionary or string", s)
}

func (f AgentForm) String() string {
	if f == FormString {
		return "string"
	}
	return "dictionary"
}

// SignerOptions configure NewSigner; the zero value is our default.
type SignerOptions struct {
	AgentURL string    // Signature-Agent URL; "": DefaultAgentURL
	Form     AgentForm // FormDictionary unless configured
	Rand     io.Reader // nonce source; nil: crypto/rand
}

// Signer signs requests with the keyring's current key. It is safe for
// concurrent use when its Rand is (crypto/rand is).
type Signer struct {
	keys       *Keyring
	agentValue string // Signature-Agent field value
	agentItem  string // the signature-agent component value in the base
	form       AgentForm
	rand       io.Reader
	// lifetime is expires - created: SignatureLifetime. Only the test of
	// the notes' worked example (which uses one hour) changes it.
	lifetime time.Duration
}

// NewSigner checks the options and makes a Signer.
func NewSigner(keys *Keyring, opts SignerOptions) (*Signer, error) {
	if keys == nil {
		return nil, errors.New("webbotauth: nil keyring")
	}
	agent := opts.AgentURL
	if agent == "" {
		agent = DefaultAgentURL
	}
	u, err := url.Parse(agent)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("webbotauth: signature agent %q: want an absolute https URL (verifiers refuse anything else)", agent)
	}
	item, err := sfString(agent)
	if err != nil {
		return nil, fmt.Errorf("webbotauth: signature agent: %w", err)
	}
	s := &Signer{keys: keys, agentItem: item, form: opts.Form, rand: opts.Rand, lifetime: SignatureLifetime}
	if s.rand == nil {
		s.rand = rand.Reader
	}
	switch opts.Form {
	case FormDictionary:
		s.agentValue = Label + "=" + item
	case FormString:
		s.agentValue = item
	default:
		return nil, fmt.Errorf("webbotauth: unknown signature-agent form %d", opts.Form)
	}
	return s, nil
}

// Sign sets Signature-Agent, Signature-Input and Signature on req, replacing
// any earlier ones, with a fresh nonce: created = now, expires = now + 5 min (SignatureLifetime).
func (s *Signer) Sign(req *http.Request, now time.Time) error {
	key, err := s.keys.Signing(now)
	if err != nil {
		return err
	}
	nonce := make([]byte, NonceSize)
	if _, err := io.ReadFull(s.rand, nonce); err != nil {
		return fmt.Errorf("webbotauth: nonce: %w", err)
	}
	agent := component{name: "signature-agent"}
	if s.form == FormDictionary {
		agent.key = Label
	}
	comps := []component{{name: "@method"}, {name: "@authority"}, {name: "@path"}, agent}
	created := now.Unix()
	params := []param{
		{"created", created},
		{"expires", created + int64(s.lifetime/time.Second)},
		{"keyid", key.ID},
		{"alg", "ed25519"},
		{"nonce", base64.StdEncoding.EncodeToString(nonce)},
		{"tag", Tag},
	}
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Signature-Agent", s.agentValue)
	members := map[string]map[string]string{"signature-agent": {Label: s.agentItem}}
	input, sig, err := sign(key.Private, comps, params, requestResolver(req, members))
	if err != nil {
		return fmt.Errorf("webbotauth: %w", err)
	}
	req.Header.Set("Signature-Input", Label+"="+input)
	req.Header.Set("Signature", Label+"="+sfBytes(sig))
	return nil
}

// transport is the signing layer of the fetch path.
type transport struct {
	next   http.RoundTripper
	signer *Signer
	clock  func() time.Time
}

// NewTransport wraps next so that every request through it (robots.txt and
// each redirect hop included: net/http sends each hop through the
// transport) carries a fresh signature made at clock(). It signs a clone:
// a RoundTripper must not change the caller's request. nil next is
// http.DefaultTransport, nil clock time.Now.
func NewTransport(next http.RoundTripper, s *Signer, clock func() time.Time) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	if clock == nil {
		clock = time.Now
	}
	return &transport{next: next, signer: s, clock: clock}
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if err := t.signer.Sign(r, t.clock()); err != nil {
		if req.Body != nil {
			req.Body.Close() // RoundTrip must close the body, even on error
		}
		return nil, err
	}
	return t.next.RoundTrip(r)
}

// CloseIdleConnections passes through to the next layer, so that
// (*http.Client).CloseIdleConnections still reaches the pool beneath.
func (t *transport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
