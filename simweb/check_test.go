package simweb

import (
	"slices"
	"strings"
	"testing"
	"time"
)

const testUA = "MapTheNetBot/1.0 (+https://www.mapthenet.org/bot)"

// logBuilder writes synthetic request logs: each request starts at a given
// second and lasts 100 ms.
type logBuilder struct {
	w    *Web
	reqs []Request
}

func (l *logBuilder) at(sec float64, host, path string, status int) *Request {
	start := fixedNow.Add(time.Duration(sec * float64(time.Second)))
	site := l.w.SiteOf(host)
	if site == "" {
		site = host
	}
	l.reqs = append(l.reqs, Request{
		Seq: len(l.reqs), Scheme: "https", Host: host, Site: site, Method: "GET", Path: path,
		UserAgent: testUA, Signature: "sig1=:AAAA:", SignatureInput: `sig1=("@authority");tag="web-bot-auth"`,
		SignatureAgent: `sig1="https://www.mapthenet.org"`, Start: start, End: start.Add(100 * time.Millisecond), Status: status,
	})
	return &l.reqs[len(l.reqs)-1]
}

// visit logs a polite visit of host: robots.txt, then paths a second apart.
func (l *logBuilder) visit(start float64, host string, paths ...string) float64 {
	l.at(start, host, "/robots.txt", 200)
	for i, p := range paths {
		l.at(start+float64(i+1), host, p, 200)
	}
	return start + float64(len(paths)+1)
}

func checkNames(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Check+" "+v.Site)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func TestChecks(t *testing.T) {
	w := newWeb(t, Config{Seed: 1, Sites: 2})
	rules := Rules{MinDelay: time.Second, Slack: 5 * time.Millisecond, UserAgent: testUA,
		Platforms: map[string]time.Duration{"github.io": 2 * time.Second}}
	clean := func(l *logBuilder) {
		l.visit(0, "s00000.example", "/", "/p/1", "/feed.xml")
		l.visit(0, "robots-rules.example", "/", "/private/open", "/index.php?x=1", "/p/1")
		l.at(0, "robots-5xx.example", "/robots.txt", 500)
		l.at(0, "opted-out.example", "/robots.txt", 200)
		l.visit(0, "crawl-delay.example")
		l.at(2, "crawl-delay.example", "/", 200)
		l.at(4, "crawl-delay.example", "/p/1", 200)
		l.visit(0, "multi-host.example", "/")
		l.visit(2, "blog.multi-host.example", "/")
		l.at(0, "alice.github.io", "/robots.txt", 200)
		l.at(2, "alice.github.io", "/", 200)
		l.at(4, "bob.github.io", "/robots.txt", 200)
		l.at(6, "bob.github.io", "/", 200)
		l.visit(0, "throttle-429-date.example", "/")
		l.at(2, "throttle-429-date.example", "/p/1", 429)
		l.visit(0, "www-redirect.example")
		l.at(2, "www-redirect.example", "/", 301)
		l.visit(3, "www.www-redirect.example", "/")
	}
	cases := []struct {
		name  string
		plant func(l *logBuilder)
		want  []string
	}{
		{"clean", func(*logBuilder) {}, nil},
		{"page before robots.txt", func(l *logBuilder) {
			l.at(0, "s00001.example", "/", 200)
			l.at(1, "s00001.example", "/robots.txt", 200)
		},
			[]string{"robots-first s00001.example"}},
		{"second host without its robots.txt", func(l *logBuilder) { l.at(10, "www.multi-host.example", "/", 301) },
			[]string{"robots-first multi-host.example"}},
		{"robots hop counts as robots.txt", func(l *logBuilder) {
			l.at(0, "robots-redirect-5.example", "/robots.txt", 301)
			l.at(1, "robots-redirect-5.example", "/robots.txt?hop=1", 301)
		}, nil},
		{"disallowed trap", func(l *logBuilder) { l.at(10, "s00000.example", "/admin/login", 200) }, []string{"robots-allowed s00000.example"}},
		{"allowed longest match", func(l *logBuilder) { l.at(10, "s00000.example", "/admin/help", 200) }, nil},
		{"disallowed $ rule", func(l *logBuilder) { l.at(10, "robots-rules.example", "/index.php", 200) }, []string{"robots-allowed robots-rules.example"}},
		{"disallowed percent-encoded", func(l *logBuilder) { l.at(10, "robots-rules.example", "/caf%c3%a9/menu", 200) }, []string{"robots-allowed robots-rules.example"}},
		{"disallowed %7E", func(l *logBuilder) { l.at(10, "robots-rules.example", "/~joe/page", 200) }, []string{"robots-allowed robots-rules.example"}},
		{"opted out", func(l *logBuilder) { l.at(10, "opted-out.example", "/", 200) }, []string{"robots-allowed opted-out.example"}},
		{"robots unavailable", func(l *logBuilder) { l.at(10, "robots-5xx.example", "/", 200) }, []string{"robots-allowed robots-5xx.example"}},
		{"two at once across hosts", func(l *logBuilder) {
			l.at(20, "multi-host.example", "/p/1", 200)
			l.at(20.05, "blog.multi-host.example", "/post/1", 200)
		}, []string{"one-at-a-time multi-host.example", "pace multi-host.example"}},
		{"aborted request may overlap", func(l *logBuilder) {
			r := l.at(20, "s00000.example", "/p/2", 200)
			r.End, r.Aborted = r.Start.Add(5*time.Second), true
			l.at(21, "s00000.example", "/p/3", 200)
		}, nil},
		{"too fast", func(l *logBuilder) { l.at(3.5, "s00000.example", "/p/2", 200) }, []string{"pace s00000.example"}},
		{"crawl-delay", func(l *logBuilder) { l.at(5.5, "crawl-delay.example", "/p/2", 200) }, []string{"pace crawl-delay.example"}},
		{"platform", func(l *logBuilder) { l.visit(1, "carol.github.io", "/") }, []string{"platform-pace github.io"}},
		{"after 429", func(l *logBuilder) { l.at(3, "throttle-429-date.example", "/p/2", 200) }, []string{"stop-after-throttle throttle-429-date.example"}},
		{"too many pages", func(l *logBuilder) {
			l.visit(100, "s00001.example", "/", "/p/1", "/p/2", "/p/3", "/p/4", "/p/5", "/feed.json", "/x", "/y")
		}, []string{"max-pages s00001.example"}},
		{"page read twice", func(l *logBuilder) { l.at(10, "www.www-redirect.example", "/", 200) }, []string{"no-repeat www-redirect.example"}},
		{"redirects may repeat", func(l *logBuilder) {
			l.visit(0, "redirect-loop.example")
			for i := range 6 {
				l.at(float64(2+2*i), "redirect-loop.example", "/", 302)
				l.at(float64(3+2*i), "redirect-loop.example", "/loop", 302)
			}
		}, nil},
		{"media", func(l *logBuilder) { l.at(10, "s00000.example", "/img/photo.jpg", 200) }, []string{"no-media s00000.example"}},
		{"unsigned", func(l *logBuilder) { l.at(10, "s00000.example", "/p/4", 200).Signature = "" }, []string{"signed s00000.example"}},
		{"signature without @authority", func(l *logBuilder) {
			l.at(10, "s00000.example", "/p/4", 200).SignatureInput = `sig1=("@method");tag="web-bot-auth"`
		}, []string{"signed s00000.example"}},
		{"user agent", func(l *logBuilder) { l.at(10, "s00000.example", "/p/4", 200).UserAgent = "Go-http-client/1.1" }, []string{"user-agent s00000.example"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &logBuilder{w: w}
			clean(l)
			tc.plant(l)
			reqs := slices.Clone(l.reqs)
			slices.SortStableFunc(reqs, func(a, b Request) int { return a.Start.Compare(b.Start) })
			vs := w.CheckAll(reqs, rules)
			if got := checkNames(vs); !slices.Equal(got, tc.want) {
				t.Errorf("violations %v, want %v\n%s", got, tc.want, joinV(vs))
			}
		})
	}
}

func joinV(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.String() + "\n")
	}
	return b.String()
}

func TestRobotsMatching(t *testing.T) {
	f := robotsFile{groups: []robotsGroup{
		{agents: []string{"*"}, rules: []robotsRule{{pattern: "/"}}},
		{agents: []string{"mapthenetbot"}, rules: []robotsRule{
			{pattern: "/private/"}, {allow: true, pattern: "/private/open"},
			{pattern: "/*.php$"}, {pattern: "/caf%C3%A9/"}, {pattern: "/%7Ejoe/"},
			{allow: true, pattern: "/tie"}, {pattern: "/tie"},
			{pattern: "/a*b*c$"},
		}},
	}}
	for _, tc := range []struct {
		path string
		ok   bool
	}{
		{"/", true}, {"/robots.txt", true}, {"/private/x", false}, {"/private/open", true}, {"/private/opening", true},
		{"/index.php", false}, {"/index.php?x=1", true}, {"/a/b.php", false}, {"/café/menu", false},
		{"/caf%c3%a9/menu", false}, {"/caf%C3%A9/", false}, {"/~joe/x", false}, {"/%7ejoe/x", false},
		{"/tie", true}, {"/abc", false}, {"/axbxc", false}, {"/axbxcx", true}, {"/ac", true},
	} {
		if got := f.allowed("MapTheNetBot", tc.path); got != tc.ok {
			t.Errorf("%s: allowed %v, want %v", tc.path, got, tc.ok)
		}
	}
	if f.allowed("OtherBot", "/x") {
		t.Error("OtherBot falls to * which disallows /")
	}
	if !(&robotsFile{status: 404}).allowed("MapTheNetBot", "/x") {
		t.Error("404 robots.txt restricts")
	}
	if (&robotsFile{status: 503}).allowed("MapTheNetBot", "/x") || (&robotsFile{hops: 6}).allowed("MapTheNetBot", "/x") {
		t.Error("unavailable robots.txt allows")
	}
}

// A stray "%" is written as "%25", as the crawler's robots normaliser
// writes it, so that a later escape cannot decode into a hex digit after it
// (the seeds under testdata/fuzz/FuzzNormalizePath are the inputs that
// found it).
func TestNormalizePath(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/", "/"},
		{"/caf%c3%a9/", "/caf%C3%A9/"},
		{"/café", "/caf%C3%A9"},
		{"/%7Ejoe", "/~joe"},
		{"/%", "/%25"},
		{"/%zz", "/%25zz"},
		{"/%4", "/%254"},
		{"%7%41", "%257A"},
		{"/%%341", "/%2541"},
		{"/100%25", "/100%25"},
		{"/a b", "/a%20b"},
	} {
		got := normalizePath(tc.in)
		if got != tc.want {
			t.Errorf("normalizePath(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := normalizePath(got); again != got {
			t.Errorf("normalizePath(%q) = %q, again %q", tc.in, got, again)
		}
	}
}

func FuzzNormalizePath(f *testing.F) {
	for _, s := range []string{"/", "/caf%c3%a9/", "/café", "/%7Ejoe", "/%", "/%zz", "/a?b=%41", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n := normalizePath(s)
		if normalizePath(n) != n {
			t.Errorf("not idempotent: %q -> %q -> %q", s, n, normalizePath(n))
		}
		for i := 0; i < len(n); i++ {
			if n[i] <= 0x20 || n[i] >= 0x7f {
				t.Fatalf("%q kept byte %#x", n, n[i])
			}
		}
		_ = robotsMatch(n, n)
	})
}

// Any request path gets an answer from every kind of host, never a panic.
func FuzzResolve(f *testing.F) {
	w, err := New(Config{Seed: 1, Sites: 1})
	if err != nil {
		f.Fatal(err)
	}
	defer w.Close()
	for _, s := range []string{"/", "/calendar/2026/01", "/calendar/99999/12", "/calendar/-1/1", "/p/1?x", "/robots.txt?hop=x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pq string) {
		for _, h := range w.world.byHost {
			p, how := h.resolve(pq)
			if p == nil && how != answerRefuse {
				t.Fatalf("%s %q: no page", h.name, pq)
			}
			if p != nil {
				p.rendered(false)
			}
			_ = h.robots.allowed(Token, pq)
		}
	})
}
