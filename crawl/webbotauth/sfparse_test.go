package webbotauth_test

// A small RFC 8941 structured-field parser and serialiser, written for the
// tests' independent verifier from RFC 8941 §4.2 (it shares no code with
// the package's serialiser).

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

type sfKind int

const (
	sfInteger sfKind = iota
	sfDecimal
	sfStringKind
	sfToken
	sfByteSeq
	sfBoolean
	sfInnerList
)

type sfParam struct {
	key string
	val sfItem // bare item
}

type sfItem struct {
	kind   sfKind
	num    int64
	dec    string
	str    string // string or token
	bytes  []byte
	boolV  bool
	inner  []sfItem
	params []sfParam
}

func (it sfItem) param(key string) (sfItem, bool) {
	for _, p := range it.params {
		if p.key == key {
			return p.val, true
		}
	}
	return sfItem{}, false
}

type sfMember struct {
	key string
	val sfItem
}

type sfParser struct {
	s string
	i int
}

var errSF = errors.New("structured field: parse error")

func (p *sfParser) fail(what string) error { return fmt.Errorf("%w at %d: %s", errSF, p.i, what) }

func (p *sfParser) skipSP() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func parseDictionary(s string) ([]sfMember, error) {
	p := &sfParser{s: s}
	p.skipSP()
	var out []sfMember
	for p.i < len(p.s) {
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		var val sfItem
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			if val, err = p.itemOrInnerList(); err != nil {
				return nil, err
			}
		} else {
			val = sfItem{kind: sfBoolean, boolV: true}
			if val.params, err = p.params(); err != nil {
				return nil, err
			}
		}
		replaced := false
		for j := range out { // a later duplicate key overwrites the value in place
			if out[j].key == key {
				out[j].val, replaced = val, true
			}
		}
		if !replaced {
			out = append(out, sfMember{key, val})
		}
		p.skipOWS()
		if p.i == len(p.s) {
			return out, nil
		}
		if p.s[p.i] != ',' {
			return nil, p.fail("want ,")
		}
		p.i++
		p.skipOWS()
		if p.i == len(p.s) {
			return nil, p.fail("trailing comma")
		}
	}
	return out, nil
}

func (p *sfParser) itemOrInnerList() (sfItem, error) {
	if p.i < len(p.s) && p.s[p.i] == '(' {
		return p.innerList()
	}
	return p.item()
}

func (p *sfParser) innerList() (sfItem, error) {
	p.i++ // (
	it := sfItem{kind: sfInnerList}
	for p.i < len(p.s) {
		p.skipSP()
		if p.i < len(p.s) && p.s[p.i] == ')' {
			p.i++
			var err error
			it.params, err = p.params()
			return it, err
		}
		e, err := p.item()
		if err != nil {
			return sfItem{}, err
		}
		it.inner = append(it.inner, e)
		if p.i < len(p.s) && p.s[p.i] != ' ' && p.s[p.i] != ')' {
			return sfItem{}, p.fail("want space or ) in inner list")
		}
	}
	return sfItem{}, p.fail("unterminated inner list")
}

func (p *sfParser) item() (sfItem, error) {
	it, err := p.bareItem()
	if err != nil {
		return sfItem{}, err
	}
	it.params, err = p.params()
	return it, err
}

func (p *sfParser) params() ([]sfParam, error) {
	var out []sfParam
	for p.i < len(p.s) && p.s[p.i] == ';' {
		p.i++
		p.skipSP()
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		val := sfItem{kind: sfBoolean, boolV: true}
		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			if val, err = p.bareItem(); err != nil {
				return nil, err
			}
		}
		replaced := false
		for j := range out {
			if out[j].key == key {
				out[j].val, replaced = val, true
			}
		}
		if !replaced {
			out = append(out, sfParam{key, val})
		}
	}
	return out, nil
}

func (p *sfParser) key() (string, error) {
	start := p.i
	if p.i >= len(p.s) || !(p.s[p.i] >= 'a' && p.s[p.i] <= 'z' || p.s[p.i] == '*') {
		return "", p.fail("want a key")
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*' {
			p.i++
			continue
		}
		break
	}
	return p.s[start:p.i], nil
}

func isTChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func (p *sfParser) bareItem() (sfItem, error) {
	if p.i >= len(p.s) {
		return sfItem{}, p.fail("want an item")
	}
	c := p.s[p.i]
	switch {
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == '"':
		p.i++
		var b strings.Builder
		for p.i < len(p.s) {
			c := p.s[p.i]
			p.i++
			switch {
			case c == '\\':
				if p.i >= len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
					return sfItem{}, p.fail("bad escape")
				}
				b.WriteByte(p.s[p.i])
				p.i++
			case c == '"':
				return sfItem{kind: sfStringKind, str: b.String()}, nil
			case c < 0x20 || c > 0x7e:
				return sfItem{}, p.fail("non-printable in string")
			default:
				b.WriteByte(c)
			}
		}
		return sfItem{}, p.fail("unterminated string")
	case c == '*' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
		start := p.i
		for p.i < len(p.s) && (isTChar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
			p.i++
		}
		return sfItem{kind: sfToken, str: p.s[start:p.i]}, nil
	case c == ':':
		p.i++
		end := strings.IndexByte(p.s[p.i:], ':')
		if end < 0 {
			return sfItem{}, p.fail("unterminated byte sequence")
		}
		enc := p.s[p.i : p.i+end]
		for j := 0; j < len(enc); j++ {
			c := enc[j]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '=') {
				return sfItem{}, p.fail("bad byte in byte sequence")
			}
		}
		b, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return sfItem{}, p.fail("bad base64")
		}
		p.i += end + 1
		return sfItem{kind: sfByteSeq, bytes: b}, nil
	case c == '?':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
			p.i += 2
			return sfItem{kind: sfBoolean, boolV: p.s[p.i-1] == '1'}, nil
		}
		return sfItem{}, p.fail("bad boolean")
	}
	return sfItem{}, p.fail("unknown item")
}

func (p *sfParser) number() (sfItem, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits, dot := 0, -1
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c >= '0' && c <= '9' {
			digits++
			p.i++
		} else if c == '.' && dot < 0 && digits > 0 {
			dot = p.i
			p.i++
		} else {
			break
		}
	}
	text := p.s[start:p.i]
	if digits == 0 {
		return sfItem{}, p.fail("want digits")
	}
	if dot < 0 {
		if digits > 15 {
			return sfItem{}, p.fail("integer too long")
		}
		n, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return sfItem{}, p.fail("bad integer")
		}
		return sfItem{kind: sfInteger, num: n}, nil
	}
	if frac := p.i - dot - 1; frac < 1 || frac > 3 || dot-start > 12+boolInt(text[0] == '-') {
		return sfItem{}, p.fail("bad decimal")
	}
	return sfItem{kind: sfDecimal, dec: text}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// serialize writes an item (or inner list) with its parameters (RFC 8941 §4.1).
func (it sfItem) serialize() string {
	var b strings.Builder
	if it.kind == sfInnerList {
		b.WriteByte('(')
		for i, e := range it.inner {
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(e.serialize())
		}
		b.WriteByte(')')
	} else {
		b.WriteString(it.bare())
	}
	for _, p := range it.params {
		b.WriteByte(';')
		b.WriteString(p.key)
		if !(p.val.kind == sfBoolean && p.val.boolV) {
			b.WriteByte('=')
			b.WriteString(p.val.bare())
		}
	}
	return b.String()
}

func (it sfItem) bare() string {
	switch it.kind {
	case sfInteger:
		return strconv.FormatInt(it.num, 10)
	case sfDecimal:
		return it.dec
	case sfStringKind:
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(it.str) + `"`
	case sfToken:
		return it.str
	case sfByteSeq:
		return ":" + base64.StdEncoding.EncodeToString(it.bytes) + ":"
	case sfBoolean:
		if it.boolV {
			return "?1"
		}
		return "?0"
	}
	return ""
}

func serializeDictionary(ms []sfMember) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		if m.val.kind == sfBoolean && m.val.boolV {
			parts[i] = m.key + sfItem{params: m.val.params}.serializeParamsOnly()
		} else {
			parts[i] = m.key + "=" + m.val.serialize()
		}
	}
	return strings.Join(parts, ", ")
}

func (it sfItem) serializeParamsOnly() string {
	s := sfItem{kind: sfBoolean, boolV: true, params: it.params}.serialize()
	return strings.TrimPrefix(s, "?1")
}
