package webbotauth

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Directory constants (notes section 3).
const (
	DirectoryPath        = "/.well-known/http-message-signatures-directory"
	DirectoryContentType = "application/http-message-signatures-directory+json"
	// DirectoryTag is the tag of the directory's own signatures.
	DirectoryTag = "http-message-signatures-directory"
)

// DirectoryResponse is the key directory as served to a request for
// authority at now: status 200, its headers and the JWKS body of the keys
// published at now. Each key proves possession with its own signature
// (labels binding0, binding1, ... in key order) over "@authority";req and
// "content-digest", valid for 7 days. With no key published the body is an
// empty key set and there is no signature.
func DirectoryResponse(keys *Keyring, authority string, now time.Time) (int, http.Header, []byte) {
	pub := keys.Published(now)
	h, body, err := directory(pub, authority, now, now.Add(DirectoryProofLifetime), func(i int) string {
		return "binding" + strconv.Itoa(i)
	})
	if err != nil {
		// Only a non-ASCII authority gets here; the request's own Host
		// could not have carried one, so answer as a server error.
		return http.StatusInternalServerError, http.Header{"Content-Type": {"text/plain; charset=utf-8"}},
			[]byte(err.Error() + "\n")
	}
	return http.StatusOK, h, body
}

// directory builds the directory response with explicit signature times and
// labels (the draft's E.2.3 vector uses the single label "binding").
func directory(pub []*Key, authority string, created, expires time.Time, label func(int) string) (http.Header, []byte, error) {
	set := JWKS{Keys: []PublicJWK{}}
	for _, k := range pub {
		set.Keys = append(set.Keys, publicJWK(k.Public()))
	}
	body, err := json.Marshal(set)
	if err != nil {
		return nil, nil, err
	}
	sum := sha256.Sum256(body)
	digest := "sha-256=" + sfBytes(sum[:])
	h := http.Header{}
	h.Set("Content-Type", DirectoryContentType)
	h.Set("Cache-Control", "max-age="+strconv.Itoa(int(DirectoryMaxAge/time.Second)))
	h.Set("Etag", `"`+b64url.EncodeToString(sum[:16])+`"`)
	h.Set("Content-Digest", digest)
	authority = strings.ToLower(authority)
	resolve := func(c component) (string, error) {
		switch {
		case c.name == "@authority" && c.req:
			return authority, nil
		case c.name == "content-digest" && !c.req:
			return digest, nil
		}
		return "", fmt.Errorf("component %s: not supported", c)
	}
	comps := []component{{name: "@authority", req: true}, {name: "content-digest"}}
	var inputs, sigs []string
	if _, err := sfString(authority); err != nil { // printable ASCII only
		return nil, nil, fmt.Errorf("authority: %w", err)
	}
	for i, k := range pub {
		params := []param{
			{"created", created.Unix()},
			{"expires", expires.Unix()},
			{"keyid", k.ID},
			{"tag", DirectoryTag},
		}
		input, sig, err := sign(k.Private, comps, params, resolve)
		if err != nil {
			return nil, nil, err
		}
		inputs = append(inputs, label(i)+"="+input)
		sigs = append(sigs, label(i)+"="+sfBytes(sig))
	}
	if len(inputs) > 0 {
		h.Set("Signature-Input", strings.Join(inputs, ", "))
		h.Set("Signature", strings.Join(sigs, ", "))
	}
	return h, body, nil
}

// WriteMessage writes a response as an HTTP/1.1 message: status line,
// header fields in name order, blank line, body (CRLF line ends). It is what
// `keys directory` prints, for a static server or a check by eye.
func WriteMessage(w io.Writer, status int, h http.Header, body []byte) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	h = h.Clone()
	h.Set("Content-Length", strconv.Itoa(len(body)))
	names := make([]string, 0, len(h))
	for n := range h {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, v := range h[n] {
			fmt.Fprintf(&b, "%s: %s\r\n", n, v)
		}
	}
	b.WriteString("\r\n")
	b.Write(body)
	_, err := w.Write(b.Bytes())
	return err
}
