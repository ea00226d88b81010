package fetch

import (
	"fmt"
	"net"
	"strings"
)

// ConnectTo is one --connect-to rule, with curl's meaning: a request to
// Host:Port connects to ToHost:ToPort instead. An empty Host or Port matches
// any; an empty ToHost or ToPort keeps the request's own. The request itself
// (Host header, TLS server name, certificate check) is unchanged.
type ConnectTo struct {
	Host, Port     string
	ToHost, ToPort string
}

// ParseConnectTo parses HOST:PORT:ADDR:PORT. IPv6 addresses go in brackets:
// "::[::1]:8443".
func ParseConnectTo(s string) (ConnectTo, error) {
	parts, err := splitColons(s)
	if err != nil || len(parts) != 4 {
		return ConnectTo{}, fmt.Errorf("--connect-to %q: want HOST:PORT:ADDR:PORT (empty HOST or PORT match any)", s)
	}
	c := ConnectTo{Host: strings.ToLower(parts[0]), Port: parts[1], ToHost: parts[2], ToPort: parts[3]}
	for _, p := range []string{c.Port, c.ToPort} {
		if p != "" && !isPort(p) {
			return ConnectTo{}, fmt.Errorf("--connect-to %q: %q is not a port", s, p)
		}
	}
	return c, nil
}

// splitColons splits on colons outside square brackets and strips the brackets.
func splitColons(s string) ([]string, error) {
	var parts []string
	var cur strings.Builder
	inBracket := false
	for _, r := range s {
		switch {
		case r == '[' && !inBracket:
			inBracket = true
		case r == ']' && inBracket:
			inBracket = false
		case r == ':' && !inBracket:
			parts = append(parts, cur.String())
			cur.Reset()
		default:
			cur.WriteRune(r)
		}
	}
	if inBracket {
		return nil, fmt.Errorf("unclosed bracket")
	}
	return append(parts, cur.String()), nil
}

func isPort(p string) bool {
	if len(p) > 5 {
		return false
	}
	n := 0
	for _, r := range p {
		if r < '0' || r > '9' {
			return false
		}
		n = n*10 + int(r-'0')
	}
	return n > 0 && n < 65536
}

// apply returns where a connection to host:port goes under the first
// matching rule (curl uses the first match too).
func apply(rules []ConnectTo, host, port string) (string, string) {
	h, p, _ := match(rules, host, port)
	return h, p
}

// match is apply, also saying whether a rule matched: such a host is the
// operator's explicit choice, exempt from the address guard.
func match(rules []ConnectTo, host, port string) (string, string, bool) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, r := range rules {
		if (r.Host == "" || r.Host == h) && (r.Port == "" || r.Port == port) {
			toHost, toPort := r.ToHost, r.ToPort
			if toHost == "" {
				toHost = host
			}
			if toPort == "" {
				toPort = port
			}
			return toHost, toPort, true
		}
	}
	return host, port, false
}

// joinHostPort is net.JoinHostPort, named here so the call sites read alike.
func joinHostPort(h, p string) string { return net.JoinHostPort(h, p) }
