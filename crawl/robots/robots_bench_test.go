package robots

import (
	"fmt"
	"strings"
	"testing"
)

// bigRobots builds a robots.txt near the 500 KiB limit: many groups for other
// agents, and a "*" group of rules, some with wildcards and anchors, the way
// large sites write them.
func bigRobots() []byte {
	var b strings.Builder
	for i := 0; b.Len() < MaxBytes/2; i++ {
		fmt.Fprintf(&b, "User-agent: bot%c%c\nDisallow: /bot/%d/\n\n", 'a'+i%26, 'a'+i/26%26, i)
	}
	b.WriteString("User-agent: *\n")
	for i := 0; b.Len() < MaxBytes-100; i++ {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&b, "Disallow: /section/%d/\n", i)
		case 1:
			fmt.Fprintf(&b, "Allow: /section/%d/public/\n", i)
		case 2:
			fmt.Fprintf(&b, "Disallow: /*?session%d=\n", i)
		default:
			fmt.Fprintf(&b, "Disallow: /files/*.ext%d$\n", i)
		}
	}
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	body := bigRobots()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		Parse(body)
	}
}

func BenchmarkGroup(b *testing.B) {
	r := Parse(bigRobots())
	for b.Loop() {
		r.Group("MapTheNetBot")
	}
}

func BenchmarkAllowed(b *testing.B) {
	g := Parse(bigRobots()).Group("MapTheNetBot")
	b.Logf("%d rules", len(g.rules))
	paths := []string{
		"/",
		"/section/5000/page.html",
		"/section/4/x",
		"/section/5/public/y",
		"/search?q=x&session10=1",
		"/files/archive.ext7",
		"/caf%C3%A9/%7Euser/menu?day=mon",
	}
	i := 0
	for b.Loop() {
		g.Allowed(paths[i%len(paths)])
		i++
	}
}

// BenchmarkAllowedSmall is the common case: a short robots.txt.
func BenchmarkAllowedSmall(b *testing.B) {
	g := Parse([]byte("User-agent: *\nDisallow: /admin/\nDisallow: /*?replytocom=\nAllow: /admin/admin-ajax.php\n")).Group("MapTheNetBot")
	for b.Loop() {
		g.Allowed("/2024/05/some-post/?utm_source=x")
	}
}

// BenchmarkAllowedHostile: rules built to make a backtracking matcher take
// quadratic time per rule, against a long path.
func BenchmarkAllowedHostile(b *testing.B) {
	var body strings.Builder
	body.WriteString("User-agent: *\n")
	for body.Len() < MaxBytes-3000 {
		body.WriteString("Disallow: /*" + strings.Repeat("a", 2000) + "b\n")
	}
	g := Parse([]byte(body.String())).Group("MapTheNetBot")
	path := "/" + strings.Repeat("a", 4000)
	b.Logf("%d rules", len(g.rules))
	for b.Loop() {
		g.Allowed(path)
	}
}
