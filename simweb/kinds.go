package simweb

import "github.com/mapthenet/mapthenet/data"

// Kind names a site's behaviour: "normal" or one case of DESIGN.md's
// "Behaviour a site owner can see".
type Kind string

const (
	KindNormal Kind = "normal" // home, inner pages, feed, links; robots.txt with one disallowed trap path

	// robots.txt cases
	KindRobots5xx       Kind = "robots_5xx"        // robots.txt answers 500: skip the site
	KindRobotsHang      Kind = "robots_hang"       // robots.txt never answers (until the client gives up)
	KindRobots404       Kind = "robots_404"        // robots.txt 404: no restrictions
	KindRobotsRedirect5 Kind = "robots_redirect_5" // robots.txt reached after 5 redirects: followed
	KindRobotsRedirect6 Kind = "robots_redirect_6" // 6 redirects: unavailable, skip the site
	KindRobotsRules     Kind = "robots_rules"      // our own group with *, $, percent-encoded paths; "*" group shuts everything
	KindCrawlDelay      Kind = "crawl_delay"       // Crawl-delay: 2
	KindOptedOut        Kind = "opted_out"         // User-agent: MapTheNetBot / Disallow: /
	KindRobotsHuge      Kind = "robots_huge"       // a 520 KiB robots.txt whose last group (ours, Disallow: /late/) must be ignored

	// responses
	KindThrottle429      Kind = "throttle_429"      // home page 429, Retry-After in seconds
	KindThrottle429Date  Kind = "throttle_429_date" // home page fine, every other page 429 with an HTTP-date Retry-After: throttled, the home page's links added
	KindThrottle503      Kind = "throttle_503"      // home page 503
	KindChallengeCF      Kind = "challenge_cf"      // 403 + cf-mitigated: challenge + Cloudflare-style page
	KindChallengeGeneric Kind = "challenge_generic" // 403 "Just a moment..." page without the header
	KindHome500          Kind = "home_500"          // home page 500
	KindGone404          Kind = "gone_404"          // home page 404
	KindGone410          Kind = "gone_410"          // home page 410
	KindRedirectLoop     Kind = "redirect_loop"     // home page redirects in a loop
	KindMoved            Kind = "moved"             // home page redirects to another registrable domain
	KindSlow             Kind = "slow"              // every response waits Config.SlowDelay

	// page contents
	KindMetaRobots Kind = "meta_robots" // meta robots / mapthenetbot / googlebot, X-Robots-Tag variants
	KindRel        Kind = "rel"         // rel nofollow/ugc/sponsored combinations, sitewide nofollow
	KindBigPage    Kind = "big_page"    // a 3 MB page: links after 1024 KB do not count
	KindNonHTML    Kind = "non_html"    // media links, image/png, a .html served as octet-stream, an inner redirect loop
	KindCalendar   Kind = "calendar"    // an endless calendar: each month links the next
	KindFeedPosts  Kind = "feed_posts"  // RSS, Atom and JSON feeds whose posts hold the site's only out-links

	// hosts and schemes
	KindHTTPOnly    Kind = "http_only"    // TLS handshake fails: http only
	KindBadCert     Kind = "bad_cert"     // TLS certificate from an untrusted CA: http only
	KindWWWOnly     Kind = "www_only"     // only www. answers; the bare host refuses (connection closed)
	KindWWWRedirect Kind = "www_redirect" // the bare host redirects every page to www.
	KindMultiHost   Kind = "multi_host"   // home on the bare host, a blog. host with its own robots.txt
	KindPlatform    Kind = "platform"     // a site of a shared platform (alice.github.io: Config.Platform)
)

// kindInfo is what a correct crawler sees of a kind.
type kindInfo struct {
	outcome data.Outcome
	status  int  // visits.http_status: the home page's last status (0: none)
	https   bool // HTTPS works
	// readable: a visit reads pages and records edges (complete, or
	// added for KindThrottle429Date, throttled after its home page).
	readable bool
}

var kinds = map[Kind]kindInfo{
	KindNormal:           {data.OutcomeOK, 200, true, true},
	KindRobots5xx:        {data.OutcomeRobotsUnavailable, 0, true, false},
	KindRobotsHang:       {data.OutcomeRobotsUnavailable, 0, true, false},
	KindRobots404:        {data.OutcomeOK, 200, true, true},
	KindRobotsRedirect5:  {data.OutcomeOK, 200, true, true},
	KindRobotsRedirect6:  {data.OutcomeRobotsUnavailable, 0, true, false},
	KindRobotsRules:      {data.OutcomeOK, 200, true, true},
	KindCrawlDelay:       {data.OutcomeOK, 200, true, true},
	KindOptedOut:         {data.OutcomeOptedOut, 0, true, false},
	KindRobotsHuge:       {data.OutcomeOK, 200, true, true},
	KindThrottle429:      {data.OutcomeThrottled, 429, true, false},
	KindThrottle429Date:  {data.OutcomeThrottled, 200, true, true},
	KindThrottle503:      {data.OutcomeThrottled, 503, true, false},
	KindChallengeCF:      {data.OutcomeBotProtection, 403, true, false},
	KindChallengeGeneric: {data.OutcomeBotProtection, 403, true, false},
	KindHome500:          {data.OutcomeHTTPError, 500, true, false},
	KindGone404:          {data.OutcomeGone, 404, true, false},
	KindGone410:          {data.OutcomeGone, 410, true, false},
	KindRedirectLoop:     {data.OutcomeHTTPError, 302, true, false},
	KindMoved:            {data.OutcomeMoved, 301, true, true},
	KindSlow:             {data.OutcomeOK, 200, true, true},
	KindMetaRobots:       {data.OutcomeOK, 200, true, true},
	KindRel:              {data.OutcomeOK, 200, true, true},
	KindBigPage:          {data.OutcomeOK, 200, true, true},
	KindNonHTML:          {data.OutcomeOK, 200, true, true},
	KindCalendar:         {data.OutcomeOK, 200, true, true},
	KindFeedPosts:        {data.OutcomeOK, 200, true, true},
	KindHTTPOnly:         {data.OutcomeOK, 200, false, true},
	KindBadCert:          {data.OutcomeOK, 200, false, true},
	KindWWWOnly:          {data.OutcomeOK, 200, true, true},
	KindWWWRedirect:      {data.OutcomeOK, 200, true, true},
	KindMultiHost:        {data.OutcomeOK, 200, true, true},
	KindPlatform:         {data.OutcomeOK, 200, true, true},
}

// Kinds lists every kind, in a fixed order.
func Kinds() []Kind {
	return []Kind{
		KindNormal, KindRobots5xx, KindRobotsHang, KindRobots404, KindRobotsRedirect5,
		KindRobotsRedirect6, KindRobotsRules, KindCrawlDelay, KindOptedOut, KindRobotsHuge,
		KindThrottle429, KindThrottle429Date, KindThrottle503, KindChallengeCF,
		KindChallengeGeneric, KindHome500, KindGone404, KindGone410, KindRedirectLoop,
		KindMoved, KindSlow, KindMetaRobots, KindRel, KindBigPage, KindNonHTML,
		KindCalendar, KindHTTPOnly, KindBadCert, KindWWWOnly, KindWWWRedirect,
		KindMultiHost, KindPlatform, KindFeedPosts,
	}
}

// DefaultSpecialKinds are the kinds Config.SpecialShare draws from: every
// case that costs the crawler no real waiting (no hang, no slow site, no
// Crawl-delay) and needs no fixed name.
var DefaultSpecialKinds = []Kind{
	KindRobots5xx, KindRobots404, KindRobotsRedirect5, KindRobotsRedirect6,
	KindRobotsRules, KindOptedOut, KindThrottle429, KindThrottle429Date,
	KindThrottle503, KindChallengeCF, KindChallengeGeneric, KindHome500,
	KindGone404, KindGone410, KindRedirectLoop, KindMoved, KindMetaRobots,
	KindRel, KindNonHTML, KindCalendar, KindHTTPOnly, KindBadCert,
	KindWWWRedirect,
}

// named is the fixed set of special sites, one per case.
var named = []struct {
	name string
	kind Kind
}{
	{"robots-5xx.example", KindRobots5xx},
	{"robots-hang.example", KindRobotsHang},
	{"robots-404.example", KindRobots404},
	{"robots-redirect-5.example", KindRobotsRedirect5},
	{"robots-redirect-6.example", KindRobotsRedirect6},
	{"robots-rules.example", KindRobotsRules},
	{"crawl-delay.example", KindCrawlDelay},
	{"opted-out.example", KindOptedOut},
	{"robots-huge.example", KindRobotsHuge},
	{"throttle-429.example", KindThrottle429},
	{"throttle-429-date.example", KindThrottle429Date},
	{"throttle-503.example", KindThrottle503},
	{"challenge-cf.example", KindChallengeCF},
	{"challenge-generic.example", KindChallengeGeneric},
	{"home-500.example", KindHome500},
	{"gone-404.example", KindGone404},
	{"gone-410.example", KindGone410},
	{"redirect-loop.example", KindRedirectLoop},
	{"moved.example", KindMoved},
	{"moved-here.example", KindNormal}, // moved.example's target
	{"slow.example", KindSlow},
	{"meta-robots.example", KindMetaRobots},
	{"rel.example", KindRel},
	{"big-page.example", KindBigPage},
	{"non-html.example", KindNonHTML},
	{"calendar.example", KindCalendar},
	{"http-only.example", KindHTTPOnly},
	{"bad-cert.example", KindBadCert},
	{"www-only.example", KindWWWOnly},
	{"www-redirect.example", KindWWWRedirect},
	{"multi-host.example", KindMultiHost},
	// Config.Platform is appended to these three.
	{"alice.", KindPlatform},
	{"bob.", KindPlatform},
	{"carol.", KindPlatform},
	{"feed-posts.example", KindFeedPosts},
}
