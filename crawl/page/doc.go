// Package page reads a fetched response (HTML or a feed) into the links the
// crawler records and follows. It executes no JavaScript, submits no forms
// and keeps no page text: only link targets, their flags and their words.
//
// The crawler calls, for every response:
//
//	switch page.Classify(resp.Header.Get("Content-Type"), advertisedFeed) {
//	case page.HTML:  p, err = r.ReadHTML(resp.Body, contentType, pageURL)
//	case page.Feed:  p, err = r.ReadFeed(resp.Body, contentType, pageURL)
//	default:         drop the response at its headers
//	}
//	eff := p.Effective(r.ParseXRobotsTag(resp.Header.Values("X-Robots-Tag")))
//
// and before requesting a link, Skip(u) says whether its extension rules it
// out (images, PDF, archives, media, …).
//
// Decisions, where DESIGN.md leaves room:
//
//   - Size: each read stops at MaxBytes (1024 KB = 1,048,576 bytes) of
//     decoded (UTF-8) content; what was read is used and Page.Truncated is
//     set. No error is returned for the cut itself.
//   - Charset (HTML): byte order mark, then the Content-Type charset, then a
//     <meta charset> / <meta http-equiv> in the first 1024 bytes, then UTF-8
//     if the start is valid UTF-8, else windows-1252 (the HTML standard's
//     order, via golang.org/x/net/html/charset).
//   - <base href>: the first <base> with an href applies to the whole
//     document, links before it included (the HTML standard's "frozen base
//     URL"). Links are therefore resolved when the read ends. A base that is
//     not http(s) or does not parse is ignored.
//   - Links come from <a href> and <area href> (also SVG <a xlink:href>),
//     http and https only after resolution, fragment and user:password@
//     removed, host lower case and IDNA A-label (bücher.example →
//     xn--bcher-kva.example). The href is cleaned as browsers do (white
//     space trimmed, tabs and newlines removed, \ read as / in the path).
//     javascript:, mailto:, data:, tel: … and hrefs Go's URL parser
//     rejects are dropped. The same URL
//     seen twice is one Link: Nofollow only if every occurrence was, words
//     merged.
//   - Ignored: anything inside <template> (inert content), the contents of
//     <script>, <style>, <textarea>, <title> and the other raw-text
//     elements. Read: the contents of <noscript>, because we run no script
//     and so see what a browser without JavaScript shows.
//   - rel: nofollow, ugc and sponsored (any of them, case-insensitive) mark
//     one link nofollow.
//   - Meta robots: <meta name="robots"> and <meta name=TOKEN> (TOKEN the
//     robots token, case-insensitive), anywhere in the document; content is
//     a list separated by commas or spaces; noindex, nofollow, none
//     (= both). Other bots' names (googlebot, …) are ignored.
//   - Advertised feeds: <link rel="alternate" type="application/rss+xml |
//     application/atom+xml | application/feed+json | application/json"
//     href>. They are for the crawler to request as feeds (Classify with
//     advertised=true); Skip is not meant for them.
//   - Removal proof: <meta name="mapthenet-verification" content> values
//     land in Page.Verification.
//   - Link words: see Words and stopwords.go. Anchor text plus the alt text
//     of images inside the anchor; <area alt>; a feed item's title for its
//     links. Inline tags (<b>, <span> …) do not split words, other tags do.
//     At most data.MaxWordsPerLink words per link; anchor text beyond 1 KB
//     is ignored.
//   - Limits: MaxLinks (10,000) distinct links per response
//     (Page.LinksCapped), 16 advertised feeds, 16 verification values.
//   - Feeds: RSS 2.0 and 1.0 (channel link, item link, item guid unless
//     isPermaLink="false"), Atom (feed and entry <link> with rel alternate
//     or no rel, resolved against xml:base), JSON Feed (home_page_url,
//     items[].url, items[].external_url). A feed's own links are followed
//     links.
//   - Feed posts: an item's HTML is where most of a feed's links are. RSS
//     <description> and <content:encoded> (entity-escaped HTML or CDATA),
//     Atom <content> and <summary> of type html or xhtml, and JSON Feed
//     content_html are read with the HTML reader's rules for links (rel
//     flags, schemes, anchor words, <template> and <script> skipped); a
//     post's <base>, <meta> and <link> tags are ignored (they cannot make the
//     feed noindex). Relative links resolve against the xml:base in scope
//     at the post (nested, as Atom says), else the item's link (else its
//     permalink guid; JSON: its url), else the feed's address. All the posts
//     of one feed share one budget of MaxBytes of HTML, so that they count
//     towards the cap of the feed that carries them.
//   - Errors: ReadHTML and ReadFeed always return a non-nil Page holding
//     the links read so far; a non-nil error says why reading stopped early
//     (the body's read error, or a feed that is not well formed).
package page
