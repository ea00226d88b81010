package robots

import (
	"sort"
	"strings"
	"time"
)

// Group is the set of rules that apply to one product token: every group of
// the file that names it, merged; else every "*" group, merged; else none.
// It is immutable, so safe for concurrent use.
type Group struct {
	rules    []rule // by specificity, longest first; Allow before Disallow on a tie
	delay    time.Duration
	hasDelay bool
	source   string
}

// What a Group was made from (Group.Source).
const (
	SourceToken = "token" // groups that name the token
	SourceStar  = "*"     // the "*" groups: none names the token
	SourceNone  = ""      // neither: nothing is disallowed
)

// Group returns the rules for token, a product token such as "MapTheNetBot"
// (anything after its leading letters, "-" and "_" is ignored, so
// "MapTheNetBot/1.0" works too). It never returns nil.
func (r *Robots) Group(token string) *Group {
	tok := productToken(token)
	if isStar(strings.Trim(token, asciiSpace)) {
		tok = ""
	}
	var named, star []*group
	for i := range r.groups {
		g := &r.groups[i]
		if g.star {
			star = append(star, g)
		}
		if tok == "" {
			continue
		}
		for _, a := range g.agents {
			if a == tok {
				named = append(named, g)
				break
			}
		}
	}
	switch {
	case len(named) > 0:
		return merge(named, SourceToken)
	case len(star) > 0:
		return merge(star, SourceStar)
	}
	return &Group{source: SourceNone}
}

// OptedOut reports whether the token's group disallows "/", the home page:
// the site shuts the token out.
func (r *Robots) OptedOut(token string) bool {
	return !r.Group(token).Allowed("/")
}

func merge(groups []*group, source string) *Group {
	out := &Group{source: source}
	for _, g := range groups {
		out.rules = append(out.rules, g.rules...)
		if g.hasDelay && (!out.hasDelay || g.delay > out.delay) {
			out.delay, out.hasDelay = g.delay, true
		}
	}
	// Sorted so that the first rule that matches is the one RFC 9309 picks:
	// the most specific, and Allow on a tie. Stable, so equal rules keep file
	// order and the result never depends on anything else.
	sort.SliceStable(out.rules, func(i, j int) bool {
		a, b := &out.rules[i], &out.rules[j]
		if a.length != b.length {
			return a.length > b.length
		}
		return a.allow && !b.allow
	})
	return out
}

// Allowed reports whether the group lets its token fetch pathAndQuery: the
// path and query of the URL as sent in the request line ("/a/b?c=d"; see
// PathOf). A fragment is ignored; a missing leading "/" is added.
func (g *Group) Allowed(pathAndQuery string) bool {
	if i := strings.IndexByte(pathAndQuery, '#'); i >= 0 {
		pathAndQuery = pathAndQuery[:i]
	}
	if !strings.HasPrefix(pathAndQuery, "/") {
		pathAndQuery = "/" + pathAndQuery // "" is "/"; "a" cannot be sent, read it as "/a"
	}
	p := normalise(pathAndQuery, false)
	if path, _, _ := strings.Cut(p, "?"); path == "/robots.txt" {
		return true // RFC 9309 section 2.2.2: always allowed
	}
	for i := range g.rules {
		if g.rules[i].matches(p) {
			return g.rules[i].allow
		}
	}
	return true
}

// CrawlDelay returns the group's Crawl-delay and whether it has one. When
// several lines give one, the longest applies.
func (g *Group) CrawlDelay() (time.Duration, bool) { return g.delay, g.hasDelay }

// Source says which groups the Group was made from: SourceToken, SourceStar
// or SourceNone.
func (g *Group) Source() string { return g.source }
