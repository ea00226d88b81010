package page

import (
	"net"
	"net/url"
	"strings"

	"golang.org/x/net/idna"
)

// resolve turns an href into an absolute http(s) URL without fragment, or
// nil. It cleans the href the way browsers do before parsing: leading and
// trailing ASCII whitespace trimmed, tabs and newlines inside removed, and
// backslashes taken as slashes before the query (http and https are
// "special" schemes in the URL standard).
func resolve(base *url.URL, href string) *url.URL {
	href = cleanHref(href)
	if href == "" && base == nil {
		return nil
	}
	ref, err := url.Parse(href)
	if err != nil {
		return nil
	}
	u := ref
	if base != nil {
		u = base.ResolveReference(ref)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil
	}
	if u.Host == "" || u.Opaque != "" {
		return nil
	}
	if u.User != nil {
		// Credentials in a link are never sent; the address without them
		// is the page linked to.
		u.User = nil
	}
	if u.Host = asciiHost(u.Host); u.Host == "" {
		return nil
	}
	u.Fragment, u.RawFragment = "", ""
	if u.Path == "" && u.RawPath == "" {
		u.Path = "/"
	}
	return u
}

// cleanHref applies the URL standard's input cleaning.
func cleanHref(s string) string {
	s = strings.Trim(s, " \t\n\r\f")
	if strings.ContainsAny(s, "\t\n\r\\") {
		var b strings.Builder
		b.Grow(len(s))
		inPath := true
		for i := 0; i < len(s); i++ {
			c := s[i]
			switch {
			case c == '\t' || c == '\n' || c == '\r':
				continue
			case c == '?' || c == '#':
				inPath = false
			case c == '\\' && inPath:
				c = '/'
			}
			b.WriteByte(c)
		}
		s = b.String()
	}
	return s
}

// absolute resolves a base or feed address: like resolve, but an unusable
// value gives nil so that the caller keeps its previous base.
func absolute(base *url.URL, href string) *url.URL {
	if strings.TrimSpace(href) == "" {
		return nil
	}
	return resolve(base, href)
}

// asciiHost lower-cases a host[:port] and turns an internationalised name
// into its A-label (IDNA, as browsers do), so that a link's host can be
// requested and compared as is; "" when the name is not a valid one.
func asciiHost(hostport string) string {
	if isPlainHost(hostport) {
		return hostport // the common case, without allocating
	}
	host, port := hostport, ""
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		host, port = h, p
	} else if strings.HasPrefix(hostport, "[") {
		host = strings.Trim(hostport, "[]")
	}
	if host == "" {
		return ""
	}
	ascii := true
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		host = strings.ToLower(host)
	} else {
		a, err := idna.Lookup.ToASCII(host)
		if err != nil || a == "" {
			return ""
		}
		host = a
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]" // IPv6 literal
	}
	if port != "" {
		return host + ":" + port
	}
	return host
}

// isPlainHost reports whether hostport is already lower-case ASCII letters,
// digits, dots and hyphens with no port: nothing for asciiHost to do.
func isPlainHost(h string) bool {
	if h == "" {
		return false
	}
	for i := 0; i < len(h); i++ {
		c := h[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}
