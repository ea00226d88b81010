package page

import (
	"mime"
	"strings"
)

// Kind is how a response is read, decided from its Content-Type.
type Kind int

const (
	Other Kind = iota // dropped at its headers
	HTML
	Feed
)

func (k Kind) String() string {
	switch k {
	case HTML:
		return "html"
	case Feed:
		return "feed"
	}
	return "other"
}

// FeedTypes are the media types of <link rel="alternate" type=…> that
// advertise a feed.
var FeedTypes = []string{
	"application/rss+xml",
	"application/atom+xml",
	"application/feed+json",
	"application/json",
}

// Classify says how to read a response of the given Content-Type.
// advertised is true when the URL was requested because a page advertised
// it as a feed (<link rel="alternate">): only then is the body read as a
// feed (DESIGN.md: only HTML and advertised feeds are read). An advertised
// feed may be served as RSS, Atom or JSON Feed media types or as the
// generic text/xml, application/xml, application/rdf+xml (RSS 1.0) or
// application/json. An HTML type is HTML whether advertised or not. A
// missing or unparsable Content-Type is Other.
func Classify(contentType string, advertised bool) Kind {
	mt := mediaType(contentType)
	switch mt {
	case "text/html", "application/xhtml+xml":
		return HTML
	case "application/rss+xml", "application/atom+xml", "application/feed+json",
		"application/rdf+xml", "text/xml", "application/xml", "application/json",
		"application/x-rss+xml", "application/rss", "text/rss+xml", "text/atom+xml":
		if advertised {
			return Feed
		}
	}
	return Other
}

// isFeedType reports whether a <link type=…> value advertises a feed.
func isFeedType(t string) bool {
	mt := mediaType(t)
	for _, f := range FeedTypes {
		if mt == f {
			return true
		}
	}
	return false
}

// mediaType is the lower-case media type of a Content-Type value, without
// parameters; "" when there is none.
func mediaType(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		// Servers send "text/html;;charset=utf-8" and worse; the part
		// before the first ';' is still the type.
		mt, _, _ = strings.Cut(contentType, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
		if strings.Count(mt, "/") != 1 {
			return ""
		}
	}
	return mt
}
