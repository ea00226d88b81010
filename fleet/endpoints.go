package fleet

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// Scheme is the --fleet URL's scheme: etcd://HOST:PORT[,HOST:PORT...].
const Scheme = "etcd://"

// maxEndpoints bounds the list: etcd clusters have 3, 5 or 7 members.
const maxEndpoints = 15

// ParseURL reads a --fleet value, etcd://HOST:PORT[,HOST:PORT...], into the
// client's endpoint list (http://HOST:PORT each). Every member a client may
// reach should be listed, so that it can fail over. Errors name the bad
// part; they are the operator's to fix (the command makes them usage errors).
//
// Only plain etcd:// is read: the client does not speak TLS to etcd yet,
// so run etcd on a private network (README, "More than one machine").
func ParseURL(s string) ([]string, error) {
	rest, ok := cutPrefixFold(s, Scheme)
	if !ok {
		return nil, fmt.Errorf("--fleet %q: want %sHOST:PORT[,HOST:PORT...], such as etcd://10.0.0.1:2379,10.0.0.2:2379,10.0.0.3:2379", s, Scheme)
	}
	if rest == "" {
		return nil, fmt.Errorf("--fleet %q: no etcd member listed after %s", s, Scheme)
	}
	parts := strings.Split(rest, ",")
	if len(parts) > maxEndpoints {
		return nil, fmt.Errorf("--fleet %q: %d members listed, at most %d", s, len(parts), maxEndpoints)
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(parts))
	for i, p := range parts {
		hp, err := parseHostPort(p)
		if err != nil {
			return nil, fmt.Errorf("--fleet %q: member %d (%q): %v", s, i+1, p, err)
		}
		if seen[hp] {
			return nil, fmt.Errorf("--fleet %q: member %s listed twice", s, hp)
		}
		seen[hp] = true
		out = append(out, "http://"+hp)
	}
	return out, nil
}

// FormatURL is the inverse of ParseURL, for logs and status.
func FormatURL(endpoints []string) string {
	hps := make([]string, len(endpoints))
	for i, e := range endpoints {
		hps[i] = strings.TrimPrefix(strings.TrimPrefix(e, "http://"), "https://")
	}
	return Scheme + strings.Join(hps, ",")
}

// parseHostPort checks one HOST:PORT and returns it in canonical form
// (lower-case host, IPv6 in brackets, port without leading zeros).
func parseHostPort(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty")
	}
	if strings.ContainsAny(p, "/?#@ \t") {
		return "", fmt.Errorf("want HOST:PORT only (no path, user or spaces)")
	}
	host, port, err := net.SplitHostPort(p)
	if err != nil {
		return "", fmt.Errorf("want HOST:PORT, such as 10.0.0.1:2379 or [::1]:2379")
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("port %q: want 1 to 65535", port)
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if addr.Zone() != "" {
			return "", fmt.Errorf("host %q: zoned addresses are not supported", host)
		}
		return net.JoinHostPort(addr.String(), strconv.Itoa(n)), nil
	}
	if strings.Contains(host, ":") {
		return "", fmt.Errorf("host %q: an IPv6 address goes in brackets, such as [::1]:2379", host)
	}
	if !validHostname(host) {
		return "", fmt.Errorf("host %q: not a host name or IP address", host)
	}
	return net.JoinHostPort(strings.ToLower(host), strconv.Itoa(n)), nil
}

// validHostname accepts DNS names of letters, digits and hyphens (labels
// of 1 to 63, not starting or ending with a hyphen), a trailing dot
// allowed, at most 253 characters.
func validHostname(h string) bool {
	h = strings.TrimSuffix(h, ".")
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

func cutPrefixFold(s, prefix string) (string, bool) {
	if len(s) < len(prefix) || !strings.EqualFold(s[:len(prefix)], prefix) {
		return s, false
	}
	return s[len(prefix):], true
}

// maxNodeName bounds a node's name (it is a key and a label).
const maxNodeName = 63

// CheckNodeName accepts a --node name: 1 to 63 of a-z, 0-9, '.', '_' and
// '-', starting with a letter or digit. It is part of etcd keys and of
// what fleet status prints.
func CheckNodeName(name string) error {
	if name == "" || len(name) > maxNodeName {
		return fmt.Errorf("--node %q: want 1 to %d characters", name, maxNodeName)
	}
	for i, c := range name {
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return fmt.Errorf("--node %q: want lower-case letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	return nil
}
