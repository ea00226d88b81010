// Package robots reads robots.txt files as RFC 9309 says, and answers the
// crawler's two questions: may this token fetch this path, and how long must
// it wait between requests.
//
// It is written by hand rather than taken from a library because the
// project's contract (DESIGN.md, "robots.txt") fixes details that the Go
// libraries disagree on: merging of every group naming the token,
// percent-encoding normalisation of both the rule and the URL, the 500 KiB
// limit, and Crawl-delay.
//
// # Parsing (Parse)
//
// Parsing never fails: a line that cannot be understood is skipped, as RFC
// 9309 section 2.3.1.5 asks. Only the first MaxBytes (500 KiB = 512,000
// bytes) are read, cut back to the last whole line. A leading UTF-8 byte
// order mark is skipped. Lines end at CR, LF or CRLF. "#" starts a comment.
// Field names are case-insensitive, and, like Google's parser, a few common
// misspellings are accepted: "useragent" and "user agent" for user-agent;
// "dissallow", "dissalow", "disalow", "diasllow" and "disallaw" for
// disallow; "crawldelay" for crawl-delay; "site-map" for sitemap. A line
// without a colon is read as "key value" when it has exactly two words
// ("Disallow /private"), again as Google does.
//
// # Groups (Robots.Group)
//
// A group is one or more user-agent lines and the allow and disallow lines
// after them (RFC 9309 section 2.2). Blank lines, comments and every other
// record (Sitemap, Crawl-delay, fields we do not know, misspellings we do
// not accept) neither end nor split a group: section 2.2.4 says they "MUST
// NOT interfere" with the group, "a \"Sitemaps\" record MUST NOT terminate a
// group". Only a rule line (an empty "Disallow:" included) ends the list of
// agents, so that the next user-agent line starts a new group. Thus
//
//	User-agent: MapTheNetBot
//	Sitemap: https://example.com/sitemap.xml
//	User-agent: *
//	Disallow: /
//
// is one group naming both, and shuts MapTheNetBot out; and in
//
//	User-agent: MapTheNetBot
//	Crawl-delay: 5
//
//	User-agent: BadBot
//	Disallow: /
//
// the Crawl-delay and the Disallow both apply to MapTheNetBot and BadBot
// alike: a Crawl-delay belongs to its whole group, every agent named before
// or after it. Google's parser has read files this way since its 2021 fix
// ("Fix group closure bug cased by not explicitly defined rules, such as
// sitemap, being treated as group separators"; it ignores Crawl-delay, an
// unknown record to it), and crawler-commons' SimpleRobotRulesParser keeps
// the group open across Sitemap, Crawl-delay and unknown lines too (it gives
// a Crawl-delay only to the agents named before it). Before that fix,
// Google's parser let any such record end the list of agents, which is what
// this package wrongly did until it followed the RFC. Rules and Crawl-delay
// before the first user-agent line belong to no group and are ignored.
//
// A user-agent line names a product token: the leading run of letters, "-"
// and "_" of its value, so "MapTheNetBot/1.0" names "MapTheNetBot". Tokens
// are compared case-insensitively. Every group naming the token is merged
// into one; if none does, every "*" group is merged; if there is no "*"
// group either, nothing is disallowed. A group that names the token but has
// no rules allows everything (it does not fall back to "*").
//
// # Matching (Group.Allowed)
//
// A rule matches a path when the path starts with the rule's pattern, where
// "*" in the pattern stands for any run of characters and a "$" at its end
// anchors it to the end of the path. Of the rules that match, the one with
// the longest pattern (in bytes, after normalisation, "*" and "$" included,
// as Google counts) wins; Allow wins a tie. No match: allowed. An empty
// Allow or Disallow value matches nothing (though, being a rule line, it
// ends its group's list of agents). A pattern that starts with
// neither "/" nor "*" can never match a path (the RFC's grammar requires
// "/"). "/robots.txt" is always allowed. Google's extensions beyond RFC
// 9309 (such as reading "Allow: /index.html" as allowing "/" too) are not
// applied.
//
// Both the pattern and the path are normalised before they are compared:
// %XX of an unreserved character (letters, digits, "-", ".", "_", "~") is
// decoded; other %XX are kept with upper-case hex digits; bytes outside
// printable ASCII (so UTF-8 text) are %-encoded; a "%" not followed by two
// hex digits becomes "%25". A literal "*" or "$" in the path becomes %2A or
// %24, and so does a "$" that is not at the end of a pattern, so that the
// RFC's examples hold: "Disallow: /path/file-with-a-%2A.html" matches the
// path "/path/file-with-a-*.html".
//
// # Fetching (FromStatus)
//
// The fetcher reads /robots.txt per host (scheme, host, port), follows up to
// MaxRedirects redirects itself (RFC 9309 section 2.3.1.2, across hosts
// too), reads at most MaxBytes of the body, and hands the final status and
// body to FromStatus: 2xx is parsed; any other 4xx means no restrictions
// (401 and 403 included, as the RFC says); 429, 5xx, a 3xx left after too
// many redirects, and anything else mean the file is unavailable, and the
// site must be skipped this visit. Timeouts and network errors are
// unavailable too; the fetcher does not call FromStatus for them.
package robots
