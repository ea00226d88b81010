package webbotauth

import (
	"crypto/ed25519"
	"fmt"
	"net"
	"net/http"
	"strings"
)

// resolver gives a covered component's value in the signature base.
type resolver func(c component) (string, error)

// signatureBase builds the RFC 9421 §2.5 signature base: one line per
// covered component, then the @signature-params line; LF between lines, none
// at the end.
func signatureBase(comps []component, sigParams string, resolve resolver) ([]byte, error) {
	var b strings.Builder
	for _, c := range comps {
		v, err := resolve(c)
		if err != nil {
			return nil, err
		}
		b.WriteString(c.String())
		b.WriteString(": ")
		b.WriteString(v)
		b.WriteByte('\n')
	}
	b.WriteString(`"@signature-params": `)
	b.WriteString(sigParams)
	return []byte(b.String()), nil
}

// sign builds the base and signs it with Ed25519 (no pre-hash, RFC 9421
// §3.3.6). It returns the Signature-Input member value and the signature.
func sign(priv ed25519.PrivateKey, comps []component, params []param, resolve resolver) (input string, sig []byte, err error) {
	input, err = signatureParams(comps, params)
	if err != nil {
		return "", nil, err
	}
	base, err := signatureBase(comps, input, resolve)
	if err != nil {
		return "", nil, err
	}
	return input, ed25519.Sign(priv, base), nil
}

// requestResolver resolves components against req. members holds the
// re-serialised Dictionary members the signer itself put in fields, by
// field name and key, so we never need to parse our own headers back.
func requestResolver(req *http.Request, members map[string]map[string]string) resolver {
	return func(c component) (string, error) {
		if c.req {
			return "", fmt.Errorf("component %s: req applies only to responses", c)
		}
		switch c.name {
		case "@method":
			if req.Method == "" {
				return http.MethodGet, nil // net/http's meaning of ""
			}
			return req.Method, nil
		case "@authority":
			return RequestAuthority(req), nil
		case "@path":
			return requestPath(req), nil
		}
		if strings.HasPrefix(c.name, "@") {
			return "", fmt.Errorf("component %s: not supported", c)
		}
		if c.key != "" {
			if v, ok := members[c.name][c.key]; ok {
				return v, nil
			}
			return "", fmt.Errorf("component %s: no such member", c)
		}
		return fieldValue(req.Header, c.name)
	}
}

// fieldValue is a field's value in the base (RFC 9421 §2.1): every field
// line's value, trimmed, joined with ", ".
func fieldValue(h http.Header, name string) (string, error) {
	vs := h.Values(name)
	if len(vs) == 0 {
		return "", fmt.Errorf("component %q: field not present", name)
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.Trim(v, " \t")
	}
	return strings.Join(out, ", "), nil
}

// RequestAuthority is req's @authority (RFC 9421 §2.2.3): the target URI's
// host, lower-cased, with the port only when it is not the scheme's default.
// The Host override (req.Host) wins over the URL, as net/http sends it.
func RequestAuthority(req *http.Request) string {
	host := req.Host
	if host == "" && req.URL != nil {
		host = req.URL.Host
	}
	scheme := "http"
	if req.URL != nil && req.URL.Scheme != "" {
		scheme = strings.ToLower(req.URL.Scheme)
	} else if req.TLS != nil {
		scheme = "https"
	}
	return Authority(scheme, host)
}

// Authority normalises host[:port] for scheme as @authority does.
func Authority(scheme, hostport string) string {
	hostport = strings.ToLower(hostport)
	h, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return hostport // no port
	}
	if (scheme == "https" && port == "443") || (scheme == "http" && port == "80") || port == "" {
		if strings.Contains(h, ":") {
			return "[" + h + "]" // IPv6 literal keeps its brackets
		}
		return h
	}
	return hostport
}

// requestPath is @path (RFC 9421 §2.2.6): the absolute path of the target
// URI as sent, "/" when empty.
func requestPath(req *http.Request) string {
	if req.URL == nil {
		return "/"
	}
	p := req.URL.EscapedPath()
	if req.URL.Opaque != "" && p == "" {
		// An opaque URL is sent as given: its path part is the
		// request target up to the query.
		p = req.URL.Opaque
		if i := strings.Index(p, "?"); i >= 0 {
			p = p[:i]
		}
		if strings.HasPrefix(p, "//") { // "//host/path" form
			if i := strings.Index(p[2:], "/"); i >= 0 {
				p = p[2+i:]
			} else {
				p = ""
			}
		}
	}
	if p == "" {
		return "/"
	}
	return p
}
