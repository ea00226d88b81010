package webbotauth

// Serialisation of the few RFC 8941 structured-field items we emit. It is
// written by hand on purpose: we only ever *serialise* (strings, integers,
// byte sequences, inner lists of component identifiers), which takes a few
// lines, while the Go libraries for RFC 9421 either fail to build here
// (github.com/yaronf/httpsign) or cannot reproduce the draft's vectors byte
// for byte (parameter order, the key= member parameter). Parsing lives only
// in the tests' independent verifier.

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
)

// sfString serialises s as an RFC 8941 §4.1.6 String: printable ASCII only,
// with " and \ escaped.
func sfString(s string) (string, error) {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e {
			return "", fmt.Errorf("structured-field string %q: byte 0x%02x is not printable ASCII", s, c)
		}
		if c == '"' || c == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String(), nil
}

// sfBytes serialises b as an RFC 8941 §4.1.8 Byte Sequence.
func sfBytes(b []byte) string { return ":" + base64.StdEncoding.EncodeToString(b) + ":" }

// component identifies one covered component (RFC 9421 §2): a field name or
// derived component name, optionally with the key parameter (one member of
// a Dictionary field, §2.1.2) and the req flag (from the request, for a
// response's signature, §2.4).
type component struct {
	name string // lower case
	key  string // "" when absent
	req  bool
}

// String serialises the identifier as it appears in the inner list and in
// the base: "name";key="k";req.
func (c component) String() string {
	s := `"` + c.name + `"`
	if c.key != "" {
		k, _ := sfString(c.key) // member keys are tokens we choose: always ASCII
		s += ";key=" + k
	}
	if c.req {
		s += ";req"
	}
	return s
}

// param is one signature parameter (RFC 9421 §2.3); value is an int64 or a
// string. Their order is the signer's choice and is kept.
type param struct {
	name  string
	value any
}

// signatureParams serialises the inner list of components with its
// parameters: the value of @signature-params and of the Signature-Input
// member.
func signatureParams(comps []component, params []param) (string, error) {
	var b strings.Builder
	b.WriteByte('(')
	for i, c := range comps {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.String())
	}
	b.WriteByte(')')
	for _, p := range params {
		b.WriteByte(';')
		b.WriteString(p.name)
		b.WriteByte('=')
		switch v := p.value.(type) {
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case string:
			s, err := sfString(v)
			if err != nil {
				return "", fmt.Errorf("parameter %s: %w", p.name, err)
			}
			b.WriteString(s)
		default:
			return "", fmt.Errorf("parameter %s: unsupported type %T", p.name, v)
		}
	}
	return b.String(), nil
}
