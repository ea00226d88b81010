// Package domain says what counts as a domain in mapthenet: the registrable
// domain (eTLD+1 by the Public Suffix List, private section included), lower
// case, IDNA A-labels (DESIGN.md, "The snapshot"). Normalize turns a host or
// URL into one, or refuses it with an *Error naming why; Check refuses a
// name that is not already one. The link store, the crawler and the
// commands all normalise through it, so that one name means one domain
// everywhere.
//
// domain imports no other package of this module.
package domain

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/net/publicsuffix"
)

// Reasons Normalize refuses a host. Test with errors.Is; the error itself
// is an *Error that names the input.
var (
	ErrEmptyHost     = errors.New("empty host")
	ErrIPAddress     = errors.New("is an IP address, not a domain name")
	ErrLocalhost     = errors.New("is localhost")
	ErrSingleLabel   = errors.New("is a single-label host, not a registrable domain")
	ErrPublicSuffix  = errors.New("is itself a public suffix, not a registrable domain")
	ErrInvalidDomain = errors.New("is not a valid domain name")
)

// Error is Normalize's and Check's error: the input and why it was refused.
type Error struct {
	Input  string
	Reason error // one of the Err* sentinels above
	Detail string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("domain %q %v", e.Input, e.Reason)
	if e.Reason == ErrEmptyHost {
		msg = "domain: empty host"
	}
	if e.Detail != "" {
		msg += " (" + e.Detail + ")"
	}
	return msg
}

func (e *Error) Unwrap() error { return e.Reason }

// lookupProfile is IDNA's lookup profile (UTS #46 mapping: lower case,
// full-width dots, STD3 rules, label checks, Bidi rule) with DNS lengths
// checked too, so that every name we keep could be looked up.
var lookupProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.VerifyDNSLength(true),
)

// Normalize turns a host, host:port, or URL into its registrable domain:
// eTLD+1 by the Public Suffix List (private section included), lower case,
// IDNA A-labels, no trailing dot or port. Hosts under TLDs the list does
// not know (s0001.example, site7.test) count as registrable domains under
// a one-label suffix, as the list's default rule says.
//
// It refuses IP addresses, localhost, single-label hosts, public suffixes
// and invalid names with an *Error wrapping one of the Err* reasons.
func Normalize(hostOrURL string) (string, error) {
	d, err := normalize(hostOrURL, true)
	if err != nil || plainHost(d) && plainHost(hostOrURL) {
		return d, err
	}
	// The full path (URL parsing, IDNA mapping) can produce A-labels that
	// do not survive a second pass (a U+FFFD from bad input, say). Keep
	// the promise Normalize(out) == out by checking it: this path is rare.
	if again, err := normalize(d, true); err != nil || again != d {
		return "", &Error{Input: hostOrURL, Reason: ErrInvalidDomain, Detail: "does not normalise stably"}
	}
	return d, nil
}

// Check refuses a name that is not a registrable domain as Normalize
// returns it (Normalize would change it, or refuse it): what the store
// accepts as a domain's name.
func Check(name string) error {
	n, err := Normalize(name)
	if err != nil {
		return err
	}
	if n != name {
		return &Error{Input: name, Reason: ErrInvalidDomain, Detail: "not normalised: the registrable domain is " + n}
	}
	return nil
}

// normalize is Normalize; fast allows the shortcut for plain host names
// (tests compare both ways).
func normalize(hostOrURL string, fast bool) (string, error) {
	in := hostOrURL
	refuse := func(reason error, detail string) (string, error) {
		return "", &Error{Input: in, Reason: reason, Detail: detail}
	}
	s := strings.TrimSpace(hostOrURL)
	if s == "" {
		return refuse(ErrEmptyHost, "")
	}
	if isIP(s) {
		return refuse(ErrIPAddress, "")
	}
	if !utf8.ValidString(s) {
		return refuse(ErrInvalidDomain, "not UTF-8")
	}
	var a string
	if fast && plainHost(s) {
		// Most names a crawl meets are already lower-case letters, digits
		// and hyphens in valid labels: URL parsing and IDNA mapping would
		// return them unchanged, at most of Normalize's cost.
		a = s
	} else {
		host, err := hostOf(s)
		if err != nil {
			return refuse(ErrInvalidDomain, err.Error())
		}
		if host == "" {
			return refuse(ErrEmptyHost, "")
		}
		if isIP(host) {
			return refuse(ErrIPAddress, "")
		}
		// One trailing dot is the fully qualified form of the same name.
		// It may be written as another dot IDNA maps to '.', like U+3002.
		trimmed := strings.HasSuffix(host, ".")
		host = strings.TrimSuffix(host, ".")
		if a, err = lookupProfile.ToASCII(host); err != nil {
			return refuse(ErrInvalidDomain, err.Error())
		}
		if !trimmed {
			a = strings.TrimSuffix(a, ".")
		}
	}
	if a == "" || strings.HasPrefix(a, ".") || strings.HasSuffix(a, ".") || strings.Contains(a, "..") {
		return refuse(ErrInvalidDomain, "empty label")
	}
	if a == "localhost" || strings.HasSuffix(a, ".localhost") {
		return refuse(ErrLocalhost, "")
	}
	if !strings.Contains(a, ".") {
		return refuse(ErrSingleLabel, "")
	}
	last := a[strings.LastIndexByte(a, '.')+1:]
	if allDigits(last) {
		// 127.1, 10.0.0.256 and friends: no TLD is all digits (RFC 3696
		// section 2), and resolvers read such names as IPv4 addresses.
		return refuse(ErrIPAddress, "numeric top-level label")
	}
	if suffix, _ := publicsuffix.PublicSuffix(a); suffix == a {
		return refuse(ErrPublicSuffix, "")
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(a)
	if err != nil {
		return refuse(ErrInvalidDomain, err.Error())
	}
	return d, nil
}

// plainHost reports whether s is a host name that URL parsing and the IDNA
// lookup profile leave as it is: dot-separated labels of 1 to 63 lower-case
// ASCII letters, digits and hyphens, no hyphen first or last, no "--" in
// the third and fourth places (where "xn--" and IDNA's reserved forms
// are), at most 253 bytes.
func plainHost(s string) bool {
	if len(s) > 253 {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
				return false
			}
			continue
		}
		label := s[start:i]
		n := len(label)
		if n == 0 || n > 63 || label[0] == '-' || label[n-1] == '-' || (n >= 4 && label[2] == '-' && label[3] == '-') {
			return false
		}
		start = i + 1
	}
	return true
}

// hostOf extracts the host part of a URL, host:port or bare host.
func hostOf(s string) (string, error) {
	if !strings.Contains(s, "://") {
		if strings.HasPrefix(s, "//") {
			s = "http:" + s
		} else {
			s = "http://" + s
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			return "", ue.Err
		}
		return "", err
	}
	if u.Opaque != "" {
		return "", errors.New("no host in URL")
	}
	return u.Hostname(), nil
}

// isIP reports whether s is an IP address, bare or bracketed, with an
// optional port or zone.
func isIP(s string) bool {
	// netip accepts only dotted decimal IPv4 (with a port after a colon)
	// and IPv6, which always has a colon: anything else, every domain
	// name with a letter, is no IP, decided here without the parsers,
	// which allocate an error per name (a tenth of ingest's allocations).
	if !strings.ContainsAny(s, ":[") && strings.Trim(s, "0123456789.") != "" {
		return false
	}
	if _, err := netip.ParseAddr(s); err == nil {
		return true
	}
	if _, err := netip.ParseAddrPort(s); err == nil {
		return true
	}
	if strings.HasPrefix(s, "[") {
		if i := strings.IndexByte(s, ']'); i > 0 {
			if _, err := netip.ParseAddr(s[1:i]); err == nil {
				return true
			}
		}
	}
	return false
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
