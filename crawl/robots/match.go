package robots

import "strings"

// rule is one Allow or Disallow line, its pattern normalised.
type rule struct {
	pattern  string   // normalised; "*" is the wildcard; no trailing "$"
	segments []string // pattern split at its "*"s; nil when it has none
	anchored bool     // the pattern ended in "$": it must match the whole path
	length   int      // specificity: bytes of the normalised pattern, "$" included
	allow    bool
}

func newRule(value string, allow bool) rule {
	p := normalise(value, true)
	r := rule{allow: allow, length: len(p)}
	if strings.HasSuffix(p, "$") {
		r.anchored, p = true, p[:len(p)-1]
	}
	r.pattern = p
	if strings.IndexByte(p, '*') >= 0 {
		r.segments = strings.Split(p, "*")
	}
	return r
}

// matches reports whether the rule matches path (already normalised).
func (r *rule) matches(path string) bool {
	if r.segments == nil {
		if r.anchored {
			return path == r.pattern
		}
		return strings.HasPrefix(path, r.pattern)
	}
	return matchSegments(r.segments, path, r.anchored)
}

// globMatch matches a pattern whose only special character is "*" against
// the start of s (all of s when anchored).
func globMatch(p string, s string, anchored bool) bool {
	return matchSegments(strings.Split(p, "*"), s, anchored)
}

// matchSegments matches the literal pieces of a pattern between its "*"s.
// With "*" the only wildcard, taking each piece at its leftmost place is
// always right (it leaves the most room for the rest), so there is no
// backtracking: time is linear in the path for each rule, whatever a hostile
// robots.txt holds.
func matchSegments(segs []string, s string, anchored bool) bool {
	if len(segs) == 1 { // no "*"
		return s == segs[0] || !anchored && strings.HasPrefix(s, segs[0])
	}
	if !strings.HasPrefix(s, segs[0]) {
		return false
	}
	pos := len(segs[0])
	last := len(segs) - 1
	for _, seg := range segs[1:last] {
		i := strings.Index(s[pos:], seg)
		if i < 0 {
			return false
		}
		pos += i + len(seg)
	}
	tail := segs[last]
	if !anchored {
		return strings.Contains(s[pos:], tail)
	}
	return len(s)-pos >= len(tail) && strings.HasSuffix(s, tail)
}

const upperHex = "0123456789ABCDEF"

// normalise puts a path, or a rule's pattern, into the form both are
// compared in (RFC 9309 section 2.2.2): %XX of an unreserved character
// decoded, other %XX with upper-case hex, bytes outside printable ASCII
// %-encoded, a stray "%" as "%25". In a path, "*" and "$" are encoded
// (%2A, %24) so that they can only match a pattern's %2A or %24; in a
// pattern, "*" stays the wildcard (runs of them collapse into one), a final
// "$" stays the anchor and any other "$" is encoded.
func normalise(s string, pattern bool) string {
	if isNormal(s, pattern) {
		return s // the common case: nothing to change, nothing to allocate
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '%':
			if i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
				v := unhex(s[i+1])<<4 | unhex(s[i+2])
				i += 2
				if isUnreserved(v) {
					b.WriteByte(v)
				} else {
					writeEscaped(&b, v)
				}
			} else {
				b.WriteString("%25")
			}
		case c == '*' && pattern:
			if b.Len() == 0 || !strings.HasSuffix(b.String(), "*") {
				b.WriteByte('*')
			}
		case c == '$' && pattern && i == len(s)-1:
			b.WriteByte('$')
		case c == '*' || c == '$' || c <= ' ' || c >= 0x7F:
			writeEscaped(&b, c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// isNormal reports whether normalise would return s unchanged.
func isNormal(s string, pattern bool) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '%', c <= ' ', c >= 0x7F:
			return false
		case c == '*' && (!pattern || (i > 0 && s[i-1] == '*')):
			return false
		case c == '$' && (!pattern || i != len(s)-1):
			return false
		}
	}
	return true
}

func writeEscaped(b *strings.Builder, c byte) {
	b.WriteByte('%')
	b.WriteByte(upperHex[c>>4])
	b.WriteByte(upperHex[c&0xF])
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// isUnreserved: RFC 3986's unreserved characters.
func isUnreserved(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
