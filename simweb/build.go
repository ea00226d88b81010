package simweb

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
)

// neverRead is the domain that links on pages a correct crawler never reads
// (disallowed, nofollow-only, dropped, past the size limit) point to: an
// edge to it is always a mistake.
const neverRead = "never-read.example"

// world is the whole model: sites and hosts.
type world struct {
	cfg    Config
	sites  []*site
	byName map[string]*site
	byHost map[string]*host
}

// buildWorld makes the sites, the link graph and every page, all from
// cfg.Seed.
func buildWorld(cfg Config) (*world, error) {
	w := &world{cfg: cfg, byName: map[string]*site{}, byHost: map[string]*host{}}
	pick := rand.New(rand.NewPCG(cfg.Seed, 1))
	for i := range cfg.Sites {
		k := KindNormal
		if cfg.SpecialShare > 0 && pick.Float64() < cfg.SpecialShare {
			k = cfg.SpecialKinds[pick.IntN(len(cfg.SpecialKinds))]
		}
		w.addSite(fmt.Sprintf("s%05d.example", i), k, true)
	}
	if !cfg.NoNamed {
		for _, n := range named {
			if !slices.Contains(cfg.Skip, n.kind) {
				name := n.name
				if n.kind == KindPlatform {
					name += cfg.Platform
				}
				w.addSite(name, n.kind, false)
			}
		}
	}
	w.linkGraph()
	for _, s := range w.sites {
		w.buildSite(s)
	}
	// A page served gzip-encoded (the 3 MB big page) is rendered and
	// compressed here, not in its first request: there it took up to
	// seconds under -race on a loaded machine, which a crawl's response
	// timeout (3 s in the e2e fleet tests) cut short, and only in the
	// first crawl of a web (TestFleetCrawl compares it with a second).
	for _, h := range w.byHost {
		for _, p := range h.pages {
			if p.gzip {
				p.rendered(true)
			}
		}
	}
	return w, nil
}

func (w *world) addSite(name string, k Kind, generated bool) {
	info := kinds[k]
	s := &site{idx: len(w.sites), Site: Site{
		Domain: name, Kind: k, Outcome: info.outcome, HTTPStatus: info.status,
		HTTPS: info.https, Generated: generated,
	}}
	if k == KindPlatform {
		s.Platform = w.cfg.Platform
	}
	w.sites = append(w.sites, s)
	w.byName[name] = s
	// Hosts are made here so that links can name them before pages exist.
	switch k {
	case KindWWWOnly:
		bare := w.addHost(s, name)
		bare.refuse, bare.tls = true, tlsFail
		s.primary = w.addHost(s, "www."+name)
	case KindWWWRedirect:
		s.primary = w.addHost(s, name)
		w.addHost(s, "www."+name)
	case KindMultiHost:
		s.primary = w.addHost(s, name)
		w.addHost(s, "www."+name)
		w.addHost(s, "blog."+name)
	default:
		s.primary = w.addHost(s, name)
	}
	switch k {
	case KindHTTPOnly:
		s.primary.tls = tlsFail
	case KindBadCert:
		s.primary.tls = tlsBadCert
	}
	s.Home = s.primary.origin() + "/"
}

func (w *world) addHost(s *site, name string) *host {
	h := &host{name: name, site: s, pages: map[string]*page{}}
	s.hosts = append(s.hosts, h)
	s.Hosts = append(s.Hosts, name)
	w.byHost[name] = h
	return h
}

// minTargets is how many out-links a kind's pages need.
var minTargets = map[Kind]int{
	KindMetaRobots: 13, KindRel: 9, KindRobotsRules: 5, KindBigPage: 3, KindMultiHost: 6, KindRobots404: 3, KindRobotsHuge: 3,
	KindFeedPosts: 6,
}

// linkGraph draws every site's out-link targets: out-degrees 2..10 skewed
// low, targets by a Zipf law over a seeded popularity order, so in-degrees
// follow a power law (a few sites collect most links).
func (w *world) linkGraph() {
	n := len(w.sites)
	if n < 2 {
		return
	}
	g := rand.New(rand.NewPCG(w.cfg.Seed, 2))
	popular := g.Perm(n)
	for _, s := range w.sites {
		r := rand.New(rand.NewPCG(w.cfg.Seed, 3+uint64(s.idx)))
		z := rand.NewZipf(r, 1.3, 2, uint64(n-1))
		d := 2 + int(math.Floor(9*math.Pow(r.Float64(), 2.5)))
		d = max(d, minTargets[s.Kind])
		if s.Kind == KindPlatform {
			// Sites of one platform link each other (webring style).
			for _, o := range w.sites {
				if o.Kind == KindPlatform && o != s {
					s.targets = append(s.targets, o)
				}
			}
		}
		for len(s.targets) < d {
			t := w.sites[popular[z.Uint64()]]
			if t == s {
				t = w.sites[popular[r.IntN(n)]]
				if t == s {
					continue
				}
			}
			s.targets = append(s.targets, t)
		}
	}
}

// builder makes one site's pages.
type builder struct {
	w      *world
	s      *site
	r      *rand.Rand
	nav    []link // the site's nav: on every HTML page of the host being built
	navExt []link // its out-links
	t      int    // next unused target
}

// target returns the next out-link target (cycling when a small web has
// fewer sites than the kind wants).
func (b *builder) target() *site {
	if len(b.s.targets) == 0 {
		return nil
	}
	t := b.s.targets[b.t%len(b.s.targets)]
	b.t++
	return t
}

// distinct returns n different targets (fewer only in a web of fewer
// sites): the site's own first, then other sites in order. Cases whose
// flags depend on each target being linked once (rel.example) use them.
func (b *builder) distinct(n int) []*site {
	var out []*site
	add := func(t *site) {
		if len(out) < n && t != b.s && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	for _, t := range b.s.targets {
		add(t)
	}
	for _, t := range b.w.sites {
		add(t)
	}
	for i, k := 0, len(out); k > 0 && len(out) < n; i++ { // a tiny web: repeat
		out = append(out, out[i%k])
	}
	return out
}

func (b *builder) left() int { return len(b.s.targets) - b.t }

// ext is a link to t's home page or, now and then, one of its inner pages.
func (b *builder) ext(t *site, rel string) link {
	path := "/"
	if (t.Kind == KindNormal || t.Kind == KindPlatform) && b.r.IntN(3) == 0 {
		path = "/p/" + strconv.Itoa(1+b.r.IntN(max(1, b.w.cfg.Pages)))
	}
	hostName := t.primary.name
	written := hostName
	if b.r.IntN(10) == 0 {
		written = upperFirst(hostName) // host names are case-insensitive
	}
	href := t.scheme() + "://" + written + path
	if b.r.IntN(12) == 0 {
		href = "//" + written + path // scheme-relative
	}
	return link{href: href, text: anchorText(b.r), rel: rel, host: hostName, path: path, site: t}
}

// trap is a link that a correct crawler never follows or counts.
func (b *builder) trap(why string) link {
	return link{href: "https://" + neverRead + "/" + why, text: "never read", host: neverRead, path: "/" + why}
}

// same is a same-site link to path on h.
func (b *builder) same(h *host, path, text string) link {
	href := path
	if b.r.IntN(5) == 0 {
		href = h.origin() + path
	}
	return link{href: href, text: text, host: h.name, path: normalizePath(path), site: b.s}
}

// sameAbs is a same-site link written as an absolute URL: the only way to
// link another host of the site.
func (b *builder) sameAbs(h *host, path, text string) link {
	return link{href: h.origin() + path, text: text, host: h.name, path: normalizePath(path), site: b.s}
}

func (b *builder) bodyRel() string {
	switch u := b.r.Float64(); {
	case u < 0.07:
		return "nofollow"
	case u < 0.11:
		return "ugc"
	case u < 0.14:
		return "sponsored"
	case u < 0.17:
		return "UGC Nofollow"
	case u < 0.25:
		return "noopener noreferrer"
	}
	return ""
}

func htmlPage(title string, nav []link, secs ...section) *page {
	return &page{status: 200, ctype: "text/html; charset=utf-8", kind: pageHTML, title: title, nav: nav, sections: secs}
}

func rawPage(ctype string, body []byte) *page {
	return &page{status: 200, ctype: ctype, kind: pageRaw, raw: body}
}

func redirectPage(status int, location string) *page {
	return &page{status: status, ctype: "text/html; charset=utf-8", kind: pageRaw, location: location,
		raw: []byte("<!doctype html><title>Moved</title><a href=\"" + location + "\">here</a>\n")}
}

func (h *host) put(path string, p *page) { h.pages[normalizePath(path)] = p }

// defaultRobots: one trap path for everyone, a group for another bot.
func defaultRobots(h *host) robotsFile {
	return robotsFile{groups: []robotsGroup{
		{agents: []string{"OtherBot"}, rules: []robotsRule{{pattern: "/"}}},
		{agents: []string{"*"}, rules: []robotsRule{{pattern: "/admin/"}, {allow: true, pattern: "/admin/help"}}},
	}, extra: "\nSitemap: " + h.origin() + "/sitemap.xml\n"}
}

// content builds normal content on h: home, pages inner pages in a binary
// tree (page i links 2i+1 and 2i+2, the home page 1 and 2), a feed, media
// links, a robots.txt trap, and the site's out-links spread over the pages.
func (b *builder) content(h *host, pages int, withFeed bool) {
	s := b.s
	h.robots = defaultRobots(h)
	b.nav = []link{b.same(h, "/", "Home")}
	if pages >= 1 {
		b.nav = append(b.nav, b.same(h, "/p/1", "About"))
	}
	if b.left() >= 3 && b.r.IntN(2) == 0 {
		for range 1 + b.r.IntN(2) {
			rel := ""
			if b.r.IntN(4) == 0 {
				rel = "nofollow"
			}
			b.navExt = append(b.navExt, b.ext(b.target(), rel))
		}
	}
	b.nav = append(b.nav, b.navExt...)
	h.nav = b.nav
	var feed *feedRef
	var feedExt *site
	if withFeed {
		switch s.idx % 3 {
		case 0:
			feed = &feedRef{"/feed.xml", "application/rss+xml"}
		case 1:
			feed = &feedRef{"/atom.xml", "application/atom+xml"}
		default:
			feed = &feedRef{"/feed.json", "application/feed+json"}
		}
		if s.idx%4 == 0 && b.left() >= 2 {
			feedExt = b.target()
		}
	}
	// Out-links round robin over home and inner pages.
	exts := make([][]link, pages+1)
	for i := 0; b.left() > 0; i++ {
		exts[i%(pages+1)] = append(exts[i%(pages+1)], b.ext(b.target(), b.bodyRel()))
	}
	for i := 0; i <= pages; i++ {
		var ls []link
		for _, c := range []int{2*i + 1, 2*i + 2} {
			if c <= pages {
				ls = append(ls, b.same(h, "/p/"+strconv.Itoa(c), anchorText(b.r)))
			}
		}
		ls = append(ls, exts[i]...)
		path, title := "/p/"+strconv.Itoa(i), fmt.Sprintf("%s page %d", s.Domain, i)
		if i == 0 {
			path, title = "/", s.Domain
			ls = append(ls,
				b.same(h, "/files/brochure.pdf", "brochure"),
				b.same(h, "/img/photo.jpg", "photo"),
				b.same(h, "/dl/site.tar.gz", "download"),
				b.same(h, "/admin/login", "login"),
			)
		}
		p := htmlPage(title, b.nav, section{filler: 300 + b.r.IntN(600), links: ls})
		p.feed = feed
		h.put(path, p)
	}
	h.put("/files/brochure.pdf", rawPage("application/pdf", []byte("%PDF-1.4\n%simweb\n")))
	h.put("/img/photo.jpg", rawPage("image/jpeg", []byte("\xff\xd8\xff\xe0simweb")))
	h.put("/dl/site.tar.gz", rawPage("application/gzip", []byte("\x1f\x8bsimweb")))
	h.put("/admin/login", htmlPage("login", b.nav, section{filler: 100, links: []link{b.trap("robots-disallowed")}}))
	if feed != nil {
		fp := &page{status: 200, ctype: feed.typ, title: s.Domain}
		switch feed.typ {
		case "application/rss+xml":
			fp.kind = pageRSS
		case "application/atom+xml":
			fp.kind = pageAtom
		default:
			fp.kind = pageJSONFeed
		}
		for i := 1; i <= pages; i++ {
			fp.items = append(fp.items, link{href: h.origin() + "/p/" + strconv.Itoa(i), text: anchorText(b.r),
				host: h.name, path: "/p/" + strconv.Itoa(i), site: s})
		}
		if feedExt != nil {
			fp.items = append(fp.items, b.ext(feedExt, ""))
		}
		h.put(feed.href, fp)
	}
}

// buildSite makes a site's pages according to its kind.
func (w *world) buildSite(s *site) {
	b := &builder{w: w, s: s, r: rand.New(rand.NewPCG(w.cfg.Seed, 1<<40+uint64(s.idx)))}
	h := s.primary
	pages := w.cfg.Pages
	switch s.Kind {
	case KindMetaRobots:
		b.metaRobots(h)
	case KindRel:
		b.rel(h)
	case KindFeedPosts:
		b.feedPosts(h)
	case KindRobotsRules:
		b.content(h, min(pages, 2), true)
		b.robotsRules(h)
	case KindBigPage:
		b.content(h, min(pages, 2), true)
		b.bigPage(h)
	case KindNonHTML:
		b.content(h, min(pages, 2), true)
		b.nonHTML(h)
	case KindCalendar:
		b.content(h, 0, true)
		h.calendar = true
		home := h.pages["/"]
		home.sections[0].links = append(home.sections[0].links, b.same(h, "/calendar/2026/01", "calendar"))
	case KindWWWRedirect:
		www := s.hosts[1]
		b.content(www, pages, true)
		h.robots = robotsFile{groups: []robotsGroup{{agents: []string{"*"}, rules: []robotsRule{{pattern: ""}}}}}
		h.redirectAll = www.origin()
	case KindMultiHost:
		b.multiHost(h, min(pages, 3))
	case KindRobotsHuge:
		b.content(h, min(pages, 4), true)
		h.robots.late = []robotsGroup{{agents: []string{"MapTheNetBot"}, rules: []robotsRule{{pattern: "/late/"}}}}
		home := h.pages["/"]
		home.sections[0].links = append(home.sections[0].links, b.same(h, "/late/page", "late"))
		h.put("/late/page", htmlPage("late", b.nav, section{filler: 100, links: []link{b.ext(b.target(), "")}}))
	case KindRobots404:
		// No restrictions: the robots.txt trap page is read, so it links a
		// real site instead of never-read.example (and a page less keeps
		// the visit within 8 pages).
		b.content(h, min(pages, 4), true)
		h.put("/admin/login", htmlPage("login", b.nav, section{filler: 100, links: []link{b.ext(b.target(), "")}}))
	default:
		b.content(h, pages, true)
	}
	home := h.pages["/"]
	switch s.Kind {
	case KindRobots5xx:
		h.robots.status = 500
	case KindRobotsHang:
		h.robots.hang = true
	case KindRobots404:
		h.robots.status = 404
	case KindRobotsRedirect5:
		h.robots.hops = 5
	case KindRobotsRedirect6:
		h.robots.hops = 6
	case KindCrawlDelay:
		// The Crawl-delay comes between "*" and our token, in one group
		// (RFC 9309 section 2.2.4: it does not end the list of agents), so
		// it is ours too; a crawler that ends the group there finds a group
		// of its own without the delay.
		h.robots.groups = []robotsGroup{
			{agents: []string{"OtherBot"}, rules: []robotsRule{{pattern: "/"}}, crawlDelay: 2},
			{agents: []string{"*", "MapTheNetBot"}, crawlDelay: 2, delayInside: true,
				rules: []robotsRule{{pattern: "/admin/"}, {allow: true, pattern: "/admin/help"}}},
		}
	case KindOptedOut:
		h.robots.groups = append([]robotsGroup{{agents: []string{"MapTheNetBot"}, rules: []robotsRule{{pattern: "/"}}}}, h.robots.groups...)
	case KindThrottle429:
		home.status = 429
		home.header = http.Header{"Retry-After": {"120"}}
	case KindThrottle503:
		home.status = 503
	case KindThrottle429Date:
		h.throttleAfterHome = true
	case KindChallengeCF:
		h.challenge = challengeCF
	case KindChallengeGeneric:
		h.challenge = challengeGeneric
	case KindHome500:
		home.status = 500
	case KindGone404:
		home.status = 404
	case KindGone410:
		home.status = 410
	case KindRedirectLoop:
		h.put("/", redirectPage(302, "/loop"))
		h.put("/loop", redirectPage(302, "/"))
	case KindMoved:
		t := w.movedTarget(s)
		if t == nil { // a web of one site: nowhere to move to
			s.Kind, s.Outcome, s.HTTPStatus = KindNormal, kinds[KindNormal].outcome, 200
			break
		}
		h.put("/", redirectPage(301, t.Home))
	case KindSlow:
		for _, x := range s.hosts {
			x.slow = true
		}
	}
	s.RobotsStatus = h.robots.robotsStatus()
	s.CrawlDelay = h.robots.crawlDelay(Token)
}

// robotsStatus is what a visit records of f (see Site.RobotsStatus).
func (f *robotsFile) robotsStatus() int {
	switch {
	case f.hang:
		return 0
	case f.hops > 5:
		return robotsRedirects[5%len(robotsRedirects)]
	case f.status == 0:
		return 200
	}
	return f.status
}

// movedTarget: moved.example moves to moved-here.example; generated moved
// sites to their first normal target.
func (w *world) movedTarget(s *site) *site {
	if !s.Generated {
		if t := w.byName["moved-here.example"]; t != nil {
			return t
		}
	}
	for _, t := range s.targets {
		if t.Kind == KindNormal {
			return t
		}
	}
	for _, t := range w.sites {
		if t.Kind == KindNormal && t != s {
			return t
		}
	}
	return nil
}

// metaRobots: six leaves, each with one meta / X-Robots-Tag variant and
// two out-links; no nav out-links (so sitewide is never in question).
func (b *builder) metaRobots(h *host) {
	h.robots = defaultRobots(h)
	b.nav = []link{b.same(h, "/", "Home")}
	leaves := []struct {
		path              string
		metas             [][2]string
		header            http.Header
		noindex, nofollow bool
		hidden            string // a same-site page linked only from here
	}{
		{path: "/m/noindex-meta", metas: [][2]string{{"robots", "noindex"}}, noindex: true},
		{path: "/m/none-meta", metas: [][2]string{{"MapTheNetBot", "none"}}, noindex: true, nofollow: true, hidden: "/m/only-via-none"},
		{path: "/m/nofollow-meta", metas: [][2]string{{"mapthenetbot", "nofollow"}}, nofollow: true, hidden: "/m/only-via-nofollow-meta"},
		{path: "/m/noindex-header", header: http.Header{"X-Robots-Tag": {"noindex"}}, noindex: true},
		{path: "/m/nofollow-header", header: http.Header{"X-Robots-Tag": {"mapthenetbot: nofollow"}}, nofollow: true, hidden: "/m/only-via-nofollow-header"},
		{path: "/m/other-bots", header: http.Header{"X-Robots-Tag": {"googlebot: noindex, nofollow", "otherbot: none"}},
			metas: [][2]string{{"googlebot", "noindex, nofollow"}, {"bingbot", "none"}}},
	}
	t := b.distinct(2*len(leaves) + 1)
	if len(t) == 0 {
		h.put("/", htmlPage(b.s.Domain, b.nav, section{filler: 300}))
		return
	}
	var homeLinks []link
	for i, l := range leaves {
		homeLinks = append(homeLinks, b.same(h, l.path, anchorText(b.r)))
		ls := []link{b.same(h, "/", "back home"), b.ext(t[2*i], ""), b.ext(t[2*i+1], "sponsored")}
		if l.hidden != "" {
			ls = append(ls, b.same(h, l.hidden, "hidden"))
			h.put(l.hidden, htmlPage("hidden", b.nav, section{filler: 100, links: []link{b.trap("nofollow-page-link-followed")}}))
		}
		p := htmlPage("meta "+l.path, b.nav, section{filler: 200, links: ls})
		p.metas, p.header, p.noindex, p.nofollow = l.metas, l.header, l.noindex, l.nofollow
		h.put(l.path, p)
	}
	homeLinks = append(homeLinks, b.ext(t[2*len(leaves)], ""))
	h.put("/", htmlPage(b.s.Domain, b.nav, section{filler: 300, links: homeLinks}))
}

// rel: every rel value on the home page, a target linked both nofollow and
// followed, and two sitewide nav links, one of them nofollow.
func (b *builder) rel(h *host) {
	h.robots = defaultRobots(h)
	t := b.distinct(9)
	if len(t) == 0 {
		h.put("/", htmlPage(b.s.Domain, []link{b.same(h, "/", "Home")}, section{filler: 300}))
		return
	}
	b.nav = []link{b.same(h, "/", "Home"), b.ext(t[7], "nofollow"), b.ext(t[8], "")}
	home := []link{
		b.same(h, "/r/1", "first"), b.same(h, "/r/2", "second"),
		b.ext(t[0], "nofollow"), b.ext(t[1], "ugc"), b.ext(t[2], "sponsored"),
		b.ext(t[3], "noopener noreferrer"), b.ext(t[4], "external UGC"),
		b.ext(t[5], "nofollow"), b.ext(t[5], ""), b.ext(t[6], "NoFollow"),
	}
	h.put("/", htmlPage(b.s.Domain, b.nav, section{filler: 300, links: home}))
	h.put("/r/1", htmlPage("rel 1", b.nav, section{filler: 300, links: []link{b.ext(t[6], "")}}))
	h.put("/r/2", htmlPage("rel 2", b.nav, section{filler: 300}))
}

// robotsRules: a group for our token with *, $ and percent-encoded rules,
// a "*" group that shuts everyone else out, and links that test each. Our
// token shares its group with another bot's, with a Sitemap, an unknown
// record and a misspelled one between the two user-agent lines: RFC 9309
// section 2.2.4 says they do not end the group, so the rules are ours (a
// crawler that ends the group there finds a group of its own with no rules,
// and fetches every trap).
func (b *builder) robotsRules(h *host) {
	h.robots.groups = []robotsGroup{
		{agents: []string{"*"}, rules: []robotsRule{{pattern: "/"}}},
		{agents: []string{"Googlebot"}, rules: []robotsRule{{allow: true, pattern: "/"}}},
		{agents: []string{"MapTheNetBot", "OtherBot"}, inside: []string{
			"Sitemap: " + h.origin() + "/sitemap.xml",
			"Content-Signal: search=yes, ai-train=no",
			"Crawl-dealy: 60",
		}, rules: []robotsRule{
			{pattern: "/admin/"},
			{pattern: "/private/"},
			{allow: true, pattern: "/private/open"},
			{pattern: "/*.php$"},
			{pattern: "/caf%C3%A9/"},
			{pattern: "/%7Ejoe/"},
			{pattern: "/search"},
		}},
	}
	add := func(path string, text string, allowed bool) {
		home := h.pages["/"]
		home.sections[0].links = append(home.sections[0].links, b.same(h, path, text))
		l := b.trap("robots-disallowed")
		if allowed {
			l = b.ext(b.target(), "")
		}
		h.put(path, htmlPage("rules "+path, b.nav, section{filler: 100, links: []link{l}}))
	}
	add("/private/secret", "secret", false)
	add("/private/open", "open", true)
	add("/index.php", "index", false)
	add("/index.php?x=1", "index query", true)
	add("/café/menu", "menu", false)
	add("/caf%c3%a9/menu?lang=en", "menu english", false)
	add("/~joe/page", "joe", false)
	add("/search?q=garden", "search", false)
}

// bigPage: a 3 MB page; links in its first 1024 KB count, later ones not.
func (b *builder) bigPage(h *host) {
	home := h.pages["/"]
	home.sections[0].links = append(home.sections[0].links, b.same(h, "/big", "big"))
	p := htmlPage("big", b.nav,
		section{filler: 500, links: []link{b.ext(b.target(), "")}},
		section{filler: 600 << 10, links: []link{b.ext(b.target(), "")}},
		section{filler: 1400 << 10, links: []link{b.trap("after-1024KB")}},
		section{filler: 1100 << 10},
	)
	p.gzip = true
	h.put("/big", p)
}

// nonHTML: media links (never requested), an image without extension, a
// .html URL served as octet-stream, and an inner redirect loop.
func (b *builder) nonHTML(h *host) {
	home := h.pages["/"]
	for _, path := range []string{"/img/photo.png", "/docs/paper.pdf", "/dl/archive.zip", "/media/song.mp3",
		"/img/PHOTO.JPG", "/img/pic.jpg?size=2", "/video/clip.mp4", "/report.html", "/pixel", "/loop-a"} {
		home.sections[0].links = append(home.sections[0].links, b.same(h, path, anchorText(b.r)))
	}
	for _, path := range []string{"/img/photo.png", "/img/PHOTO.JPG", "/img/pic.jpg?size=2", "/pixel"} {
		h.put(path, rawPage("image/png", pngPixel))
	}
	h.put("/docs/paper.pdf", rawPage("application/pdf", []byte("%PDF-1.4\n")))
	h.put("/dl/archive.zip", rawPage("application/zip", []byte("PK\x03\x04")))
	h.put("/media/song.mp3", rawPage("audio/mpeg", []byte("ID3")))
	h.put("/video/clip.mp4", rawPage("video/mp4", []byte("\x00\x00\x00\x18ftypmp42")))
	report := rawPage("application/octet-stream", []byte(`<!doctype html><title>report</title><a href="https://`+neverRead+`/octet-stream">read</a>`))
	h.put("/report.html", report)
	h.put("/loop-a", redirectPage(302, "/loop-b"))
	h.put("/loop-b", redirectPage(302, "/loop-a"))
}

// multiHost: content on the bare host, a blog host with its own robots.txt
// and out-links, and www. redirecting to the bare host.
func (b *builder) multiHost(h *host, pages int) {
	www, blog := b.s.hosts[1], b.s.hosts[2]
	b.content(h, pages, true)
	www.robots = defaultRobots(www)
	www.redirectAll = h.origin()
	blog.robots = robotsFile{groups: []robotsGroup{{agents: []string{"*"}, rules: []robotsRule{{pattern: "/drafts/"}}}}}
	home := h.pages["/"]
	home.sections[0].links = append(home.sections[0].links, b.sameAbs(blog, "/", "blog"))
	// Relative links resolve against the page's own host: the blog's nav
	// names the main site absolutely.
	nav := append([]link{b.same(blog, "/", "Blog"),
		b.sameAbs(h, "/", "Main")}, b.navExt...)
	blog.nav = nav
	blog.put("/", htmlPage("blog", nav, section{filler: 300, links: []link{
		b.same(blog, "/post/1", "first post"), b.same(blog, "/drafts/new", "draft"), b.ext(b.target(), ""),
	}}))
	blog.put("/post/1", htmlPage("post", nav, section{filler: 300, links: []link{b.ext(b.target(), "ugc")}}))
	blog.put("/drafts/new", htmlPage("draft", nav, section{filler: 100, links: []link{b.trap("robots-disallowed")}}))
}

// feedPosts: three HTML pages that link only their own site, each
// advertising one feed (RSS, Atom, JSON Feed) whose items link the pages
// and whose posts hold the site's only out-links: entity-escaped and CDATA
// RSS, Atom html content under an xml:base naming another site (a relative
// href that only the base makes external) and xhtml, JSON content_html;
// rel flags as on pages, and a same-site link that is followed.
func (b *builder) feedPosts(h *host) {
	h.robots = defaultRobots(h)
	b.nav = []link{b.same(h, "/", "Home")}
	h.nav = b.nav
	t := b.distinct(6)
	pages := []struct {
		path string
		feed feedRef
		kind pageKind
	}{
		{"/", feedRef{"/feed.xml", "application/rss+xml"}, pageRSS},
		{"/p/1", feedRef{"/atom.xml", "application/atom+xml"}, pageAtom},
		{"/p/2", feedRef{"/feed.json", "application/feed+json"}, pageJSONFeed},
	}
	for i, pg := range pages {
		var ls []link
		if i == 0 {
			ls = []link{b.same(h, "/p/1", anchorText(b.r)), b.same(h, "/p/2", anchorText(b.r))}
		}
		p := htmlPage(fmt.Sprintf("%s %s", b.s.Domain, pg.path), b.nav, section{filler: 300, links: ls})
		p.feed = &pg.feed
		h.put(pg.path, p)
		fp := &page{status: 200, ctype: pg.feed.typ, kind: pg.kind, title: b.s.Domain}
		for j := 1; j <= 2; j++ {
			fp.items = append(fp.items, link{href: h.origin() + "/p/" + strconv.Itoa(j), text: anchorText(b.r),
				host: h.name, path: "/p/" + strconv.Itoa(j), site: b.s})
		}
		h.put(pg.feed.href, fp)
	}
	if len(t) == 0 {
		return
	}
	post := func(feed string, item int, form postForm, base string, ls ...link) {
		p := h.pages[feed]
		p.posts = append(p.posts, feedPost{item: item, form: form, base: base, links: ls})
	}
	// A relative href under an xml:base naming t[2]'s host: only the base
	// makes it external.
	based := link{href: "notes/post", text: anchorText(b.r), host: t[2].primary.name, path: "/notes/post", site: t[2]}
	post("/feed.xml", 0, postEscaped, "", b.ext(t[0], ""), b.same(h, "/p/2", "more"))
	post("/feed.xml", 1, postCDATA, "", b.ext(t[1], "ugc"))
	post("/atom.xml", 0, postEscaped, t[2].primary.origin()+"/", based)
	post("/atom.xml", 1, postXHTML, "", b.ext(t[3], ""))
	post("/feed.json", 0, postEscaped, "", b.ext(t[4], ""), b.ext(t[5], "sponsored"))
}
