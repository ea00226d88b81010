package simweb

import (
	"slices"
	"strconv"
	"strings"
)

// The robots.txt model: the web writes every robots.txt from these structs,
// and the checkers and ExpectedEdges decide "allowed" from the same structs,
// so no robots.txt text is ever parsed here. Matching follows RFC 9309.

// robotsRule is one Allow or Disallow line.
type robotsRule struct {
	allow   bool
	pattern string
}

// robotsGroup is one group: its user-agent lines, rules and Crawl-delay.
// RFC 9309 section 2.2.4: records other than user-agent, allow and disallow
// never end or split a group, so a group may carry such records between its
// user-agent lines and still be one group, as the oracle (group) reads it.
type robotsGroup struct {
	agents     []string
	rules      []robotsRule
	crawlDelay int // seconds; 0: none
	// inside are lines written right after the first user-agent line, before
	// the others (Sitemap, unknown fields, misspellings), and delayInside
	// writes the Crawl-delay there too rather than after the rules.
	inside      []string
	delayInside bool
}

// robotsFile is what a host's /robots.txt answers.
type robotsFile struct {
	status int // 200, 404, 500...; 0 means 200
	hang   bool
	hops   int // redirects before the file is reached
	groups []robotsGroup
	extra  string // lines appended verbatim (Sitemap:)
	// late groups come after padding that pushes them past
	// MaxRobotsBytes: a correct crawler never sees them.
	late []robotsGroup
}

// MaxRobotsBytes is how much of a robots.txt a correct crawler parses
// (DESIGN.md: at most 500 KiB).
const MaxRobotsBytes = 500 << 10

// available reports whether a correct crawler can read rules from this file
// (RFC 9309 / DESIGN.md: 2xx parse, 3xx up to 5 redirects, 4xx no
// restrictions; 5xx, timeout, too many redirects: skip the site).
func (f *robotsFile) available() bool {
	if f.hang || f.hops > 5 {
		return false
	}
	return f.status < 500
}

// group is the rules for token (RFC 9309 section 2.2.1): every group naming
// it (case-insensitive), merged; else every "*" group, merged; nil when
// none applies. Merged Crawl-delays: the longest, as the crawler honours.
func (f *robotsFile) group(token string) *robotsGroup {
	if f.status >= 400 {
		return nil
	}
	var named, star []*robotsGroup
	for i := range f.groups {
		g := &f.groups[i]
		if slices.ContainsFunc(g.agents, func(a string) bool { return strings.EqualFold(a, token) }) {
			named = append(named, g)
		}
		if slices.Contains(g.agents, "*") {
			star = append(star, g)
		}
	}
	if len(named) == 0 {
		named = star
	}
	if len(named) == 0 {
		return nil
	}
	out := &robotsGroup{}
	for _, g := range named {
		out.rules = append(out.rules, g.rules...)
		out.crawlDelay = max(out.crawlDelay, g.crawlDelay)
	}
	return out
}

// crawlDelay is the Crawl-delay, in seconds, that applies to token (0: none).
func (f *robotsFile) crawlDelay(token string) int {
	if !f.available() {
		return 0
	}
	if g := f.group(token); g != nil {
		return g.crawlDelay
	}
	return 0
}

// allowed reports whether token may fetch pathQuery (path and query as
// requested). /robots.txt itself is always allowed.
func (f *robotsFile) allowed(token, pathQuery string) bool {
	if isRobotsPath(pathQuery) {
		return true
	}
	if !f.available() {
		return false
	}
	g := f.group(token)
	if g == nil {
		return true
	}
	p := normalizePath(pathQuery)
	best, allow := -1, true
	for _, r := range g.rules {
		if r.pattern == "" {
			continue // an empty Disallow allows everything
		}
		pat := normalizePath(r.pattern)
		if !robotsMatch(pat, p) {
			continue
		}
		if n := len(pat); n > best || (n == best && r.allow) {
			best, allow = n, r.allow
		}
	}
	return allow
}

// text renders the file.
func (f *robotsFile) text() []byte {
	var b strings.Builder
	for i, g := range f.groups {
		if i > 0 {
			b.WriteString("\n")
		}
		delay := ""
		if g.crawlDelay > 0 {
			delay = "Crawl-delay: " + strconv.Itoa(g.crawlDelay) + "\n"
		}
		for i, a := range g.agents {
			b.WriteString("User-agent: " + a + "\n")
			if i == 0 {
				if g.delayInside {
					b.WriteString(delay)
				}
				for _, l := range g.inside {
					b.WriteString(l + "\n")
				}
			}
		}
		for _, r := range g.rules {
			if r.allow {
				b.WriteString("Allow: " + r.pattern + "\n")
			} else {
				b.WriteString("Disallow: " + r.pattern + "\n")
			}
		}
		if !g.delayInside {
			b.WriteString(delay)
		}
	}
	b.WriteString(f.extra)
	if len(f.late) > 0 {
		for b.Len() < MaxRobotsBytes+(20<<10) {
			b.WriteString("# padding: the groups below start past 500 KiB and must be ignored\n")
		}
		late := robotsFile{groups: f.late}
		b.WriteString("\n")
		b.Write(late.text())
	}
	return []byte(b.String())
}

// isRobotsPath: /robots.txt, with or without a query (the redirect hops of
// robots-redirect sites are /robots.txt?hop=N).
func isRobotsPath(pathQuery string) bool {
	p, _, _ := strings.Cut(pathQuery, "?")
	return p == "/robots.txt"
}

// robotsMatch matches an RFC 9309 pattern (with * and a trailing $) against
// a normalised path.
func robotsMatch(pat, p string) bool {
	anchored := strings.HasSuffix(pat, "$")
	if anchored {
		pat = pat[:len(pat)-1]
	}
	parts := strings.Split(pat, "*")
	if !strings.HasPrefix(p, parts[0]) {
		return false
	}
	pos := len(parts[0])
	for i := 1; i < len(parts); i++ {
		part := parts[i]
		if i == len(parts)-1 && anchored {
			return len(p)-pos >= len(part) && strings.HasSuffix(p, part)
		}
		j := strings.Index(p[pos:], part)
		if j < 0 {
			return false
		}
		pos += j + len(part)
	}
	if anchored {
		return pos == len(p)
	}
	return true
}

// normalizePath puts a path (and query) in one percent-encoding form:
// escapes of unreserved characters decoded, other escapes upper case,
// bytes outside printable ASCII escaped (RFC 3986 §6.2.2, as RFC 9309 asks),
// and a stray "%" (not followed by two hex digits) written as "%25", as the
// crawler's robots normaliser does. Left as it was, a stray "%" could meet
// the decoded byte of a later escape and form a new one ("%7%41" -> "%7A"),
// so that normalising twice would differ from normalising once.
func normalizePath(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]):
			v := unhex(s[i+1])<<4 | unhex(s[i+2])
			if isUnreserved(v) {
				b.WriteByte(v)
			} else {
				b.WriteByte('%')
				b.WriteByte(hex[v>>4])
				b.WriteByte(hex[v&15])
			}
			i += 2
		case c == '%':
			b.WriteString("%25")
		case c <= 0x20 || c >= 0x7f:
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&15])
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}
