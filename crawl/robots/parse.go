package robots

import (
	"bytes"
	"strings"
	"time"
)

// MaxBytes is how much of a robots.txt body is parsed: 500 KiB (512,000
// bytes), the least RFC 9309 section 2.5 allows. The fetcher may stop
// reading there.
const MaxBytes = 512_000

// Robots is a parsed robots.txt. It is immutable, so safe for concurrent use.
type Robots struct {
	groups    []group
	sitemaps  []string
	truncated bool
}

// group is one group as written in the file: its user-agent lines and the
// lines that follow them.
type group struct {
	agents   []string // product tokens, lower case
	star     bool     // one of its user-agent lines is "*"
	rules    []rule
	delay    time.Duration
	hasDelay bool
}

// Parse reads a robots.txt body. It never fails: lines it cannot read are
// skipped (see the package documentation for what it accepts).
func Parse(body []byte) *Robots {
	r := &Robots{}
	body, r.truncated = limit(body)
	body = bytes.TrimPrefix(body, []byte("\xEF\xBB\xBF"))

	var cur *group   // the group lines are added to; nil before any user-agent
	sawRule := false // cur has had an allow or disallow line
	for len(body) > 0 {
		var line []byte
		line, body = nextLine(body)
		key, value, ok := keyValue(line)
		if !ok {
			continue // blank, comment, or no field: changes nothing
		}
		k := canonicalKey(key)
		switch k {
		case keyUserAgent:
			// RFC 9309 section 2.2: a group is its user-agent lines and the
			// rules after them, so only a rule ends the list of agents.
			// Other records (Sitemap, Crawl-delay, unknown fields) are
			// transparent (section 2.2.4: they "MUST NOT terminate a
			// group"): "User-agent: a", "Sitemap: …", "User-agent: *",
			// "Disallow: /" shuts a out too.
			if cur == nil || sawRule {
				r.groups = append(r.groups, group{})
				cur = &r.groups[len(r.groups)-1]
				sawRule = false
			}
			if isStar(value) {
				cur.star = true
			} else if tok := productToken(value); tok != "" {
				cur.agents = append(cur.agents, tok)
			}
		case keyAllow, keyDisallow:
			if cur == nil {
				continue // RFC 9309: rules outside a group are ignored
			}
			// An empty pattern matches nothing, but it is a rule line all
			// the same (the RFC's grammar has empty-pattern): it ends the
			// group's list of agents.
			sawRule = true
			if value == "" {
				continue
			}
			cur.rules = append(cur.rules, newRule(value, k == keyAllow))
		case keyCrawlDelay:
			if cur == nil {
				continue
			}
			if d, ok := parseDelay(value); ok && (!cur.hasDelay || d > cur.delay) {
				// It belongs to the whole group, every agent named before or
				// after it. Several Crawl-delay lines in a group: the
				// slowest wins, to be polite.
				cur.delay, cur.hasDelay = d, true
			}
		case keySitemap:
			if value != "" {
				r.sitemaps = append(r.sitemaps, value)
			}
		}
	}
	return r
}

// Sitemaps returns the Sitemap lines' values, in file order. They belong to
// no group.
func (r *Robots) Sitemaps() []string { return append([]string(nil), r.sitemaps...) }

// Truncated reports whether the body was longer than MaxBytes, so that its
// end was not parsed.
func (r *Robots) Truncated() bool { return r.truncated }

// limit cuts body to MaxBytes, back to the end of its last whole line.
func limit(body []byte) ([]byte, bool) {
	if len(body) <= MaxBytes {
		return body, false
	}
	if c := body[MaxBytes]; c == '\n' || c == '\r' {
		// The cut falls exactly at an end of line: the last line is whole.
		// (A CR at MaxBytes-1 with its LF at MaxBytes is also whole.)
		return body[:MaxBytes], true
	}
	cut := body[:MaxBytes]
	if i := bytes.LastIndexAny(cut, "\r\n"); i >= 0 {
		return cut[:i+1], true
	}
	return nil, true // one line longer than the limit: nothing whole to read
}

// nextLine splits off the first line, which ends at CR, LF or CRLF.
func nextLine(b []byte) (line, rest []byte) {
	i := bytes.IndexAny(b, "\r\n")
	if i < 0 {
		return b, nil
	}
	line, rest = b[:i], b[i+1:]
	if b[i] == '\r' && len(rest) > 0 && rest[0] == '\n' {
		rest = rest[1:]
	}
	return line, rest
}

const asciiSpace = " \t\v\f"

// keyValue reads "key: value" from one line, comment removed. Like Google's
// parser, it also accepts "key value" without the colon when the line has
// exactly two words.
func keyValue(line []byte) (key, value string, ok bool) {
	if i := bytes.IndexByte(line, '#'); i >= 0 {
		line = line[:i]
	}
	s := strings.Trim(string(line), asciiSpace)
	if s == "" {
		return "", "", false
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		key, value = s[:i], s[i+1:]
	} else {
		i := strings.IndexAny(s, asciiSpace)
		if i < 0 {
			return "", "", false
		}
		key, value = s[:i], strings.TrimLeft(s[i:], asciiSpace)
		if strings.ContainsAny(value, asciiSpace) {
			return "", "", false
		}
	}
	key = strings.Trim(key, asciiSpace)
	if key == "" {
		return "", "", false
	}
	return key, strings.Trim(value, asciiSpace), true
}

type fieldKey int

const (
	keyUnknown fieldKey = iota
	keyUserAgent
	keyAllow
	keyDisallow
	keyCrawlDelay
	keySitemap
)

// keys maps lower-case field names, and the misspellings Google accepts, to
// the fields they mean.
var keys = map[string]fieldKey{
	"user-agent":  keyUserAgent,
	"useragent":   keyUserAgent,
	"user agent":  keyUserAgent,
	"allow":       keyAllow,
	"disallow":    keyDisallow,
	"dissallow":   keyDisallow,
	"dissalow":    keyDisallow,
	"disalow":     keyDisallow,
	"diasllow":    keyDisallow,
	"disallaw":    keyDisallow,
	"crawl-delay": keyCrawlDelay,
	"crawldelay":  keyCrawlDelay,
	"sitemap":     keySitemap,
	"site-map":    keySitemap,
}

func canonicalKey(key string) fieldKey {
	return keys[strings.ToLower(key)]
}

// isStar reports whether a user-agent value is the "*" that names every
// crawler ("*" alone, or followed by a space and anything).
func isStar(value string) bool {
	return value == "*" || (len(value) > 1 && value[0] == '*' && strings.IndexByte(asciiSpace, value[1]) >= 0)
}

// ProductToken returns the product token a user-agent value names: its
// leading run of letters, "-" and "_" (RFC 9309's identifier), so that
// "MapTheNetBot/1.0 (+https://...)" names "MapTheNetBot". It is "" when the
// value starts with anything else.
func ProductToken(value string) string {
	i := 0
	for i < len(value) && isTokenByte(value[i]) {
		i++
	}
	return value[:i]
}

// IsProductToken reports whether s is a product token as RFC 9309 section
// 2.2.1 defines one: letters, "-" and "_" only, at least one of them. A
// crawler's own token must be one; "MapTheNetBot/1.0" or "Bot2" is not (a
// robots.txt line naming "Bot2" names "Bot", so such a token could never be
// matched as written).
func IsProductToken(s string) bool {
	return s != "" && ProductToken(s) == s
}

// productToken is ProductToken in lower case, the form tokens are compared in.
func productToken(value string) string { return strings.ToLower(ProductToken(value)) }

func isTokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_'
}
