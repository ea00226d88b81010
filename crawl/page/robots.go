package page

import "strings"

// Directives are the robots directives that apply to us for one page.
type Directives struct {
	NoIndex  bool // no edge from this page at all
	NoFollow bool // every link of this page is nofollow and not followed
}

// Merge returns the union of d and o: a directive from either applies.
func (d Directives) Merge(o Directives) Directives {
	return Directives{NoIndex: d.NoIndex || o.NoIndex, NoFollow: d.NoFollow || o.NoFollow}
}

// ParseXRobotsTag reads the X-Robots-Tag header values of a response (all of
// them, as http.Header.Values gives them) for the Reader's token.
func (r *Reader) ParseXRobotsTag(values []string) Directives {
	return ParseXRobotsTag(values, r.token())
}

// ParseXRobotsTag reads X-Robots-Tag header values for the robots token
// (case-insensitive; "" means DefaultToken).
//
// Each value is a comma-separated list of directives. A directive may be
// prefixed by a bot name and a colon ("googlebot: noindex"): from there to
// the end of that value, or to the next prefix, the directives are that
// bot's. Directives without a prefix apply to every bot, so to us; those
// under our token apply to us; those under other names are ignored. A
// directive that takes a value ("unavailable_after: <date>", "max-snippet:
// 20") is not a bot name; nor is anything that is not a plain token (a
// date's fragment after a comma, "03-Nov-2021 15:00:00 GMT", has a space).
// We act on noindex, nofollow and none (= both); the rest are ignored.
func ParseXRobotsTag(values []string, token string) Directives {
	token = strings.ToLower(strings.TrimSpace(token))
	if token == "" {
		token = DefaultToken
	}
	var d Directives
	for _, v := range values {
		forUs := true // a value starts out addressed to every bot
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if name, rest, ok := strings.Cut(item, ":"); ok {
				name = strings.ToLower(strings.TrimSpace(name))
				if isBotName(name) {
					forUs = name == token
					item = strings.TrimSpace(rest)
				}
			}
			if forUs {
				d = d.Merge(directive(item))
			}
		}
	}
	return d
}

// parseMetaRobots reads the content of <meta name="robots"> or <meta
// name=TOKEN>: directives separated by commas or white space (both are seen
// in the wild).
func parseMetaRobots(content string) Directives {
	var d Directives
	for _, f := range strings.FieldsFunc(content, func(r rune) bool {
		return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f'
	}) {
		d = d.Merge(directive(f))
	}
	return d
}

// directive maps one directive (case-insensitive) to what it means for us.
func directive(s string) Directives {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "noindex":
		return Directives{NoIndex: true}
	case "nofollow":
		return Directives{NoFollow: true}
	case "none":
		return Directives{NoIndex: true, NoFollow: true}
	}
	return Directives{}
}

// valuedDirectives are the directives written "name: value"; their names
// must not be taken for bot names.
var valuedDirectives = map[string]bool{
	"unavailable_after": true,
	"max-snippet":       true,
	"max-image-preview": true,
	"max-video-preview": true,
}

// isBotName reports whether name (lower case) can be a bot prefix: a
// non-empty product token (letters, digits, '-', '_', '.') that is not a
// directive.
func isBotName(name string) bool {
	if name == "" || valuedDirectives[name] {
		return false
	}
	switch name {
	case "noindex", "nofollow", "none", "all":
		// "noindex: …" is a typo, not a bot.
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
