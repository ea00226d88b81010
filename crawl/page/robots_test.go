package page

import (
	"os"
	"strings"
	"testing"
)

func fmtDirectives(d Directives) string {
	var f []string
	if d.NoIndex {
		f = append(f, "noindex")
	}
	if d.NoFollow {
		f = append(f, "nofollow")
	}
	if len(f) == 0 {
		return "-"
	}
	return strings.Join(f, " ")
}

// TestXRobotsTagCases runs testdata/xrobots.txt.
func TestXRobotsTagCases(t *testing.T) {
	const path = "testdata/xrobots.txt"
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []string
	var values []string
	token := ""
	n := 0
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "":
			out = append(out, line)
			values, token = nil, ""
		case strings.HasPrefix(line, "token: "):
			token = strings.TrimPrefix(line, "token: ")
			out = append(out, line)
		case strings.HasPrefix(line, "=>"):
			n++
			got := "=> " + fmtDirectives(ParseXRobotsTag(values, token))
			if got != line && !*update {
				t.Errorf("%s:%d: values %q (token %q): got %q, want %q", path, i+1, values, token, got, line)
			}
			out = append(out, got)
			values = nil
		default:
			values = append(values, line)
			out = append(out, line)
		}
	}
	if n == 0 {
		t.Fatal("no cases")
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.Join(out, "\n")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMetaRobots(t *testing.T) {
	for _, tc := range []struct{ content, want string }{
		{"noindex", "noindex"},
		{"noindex,nofollow", "noindex nofollow"},
		{"noindex nofollow", "noindex nofollow"},
		{" NONE ", "noindex nofollow"},
		{"index, follow", "-"},
		{"noindex\tfollow", "noindex"},
		{"max-snippet:-1, nofollow", "nofollow"},
		{"", "-"},
	} {
		if got := fmtDirectives(parseMetaRobots(tc.content)); got != tc.want {
			t.Errorf("parseMetaRobots(%q) = %s, want %s", tc.content, got, tc.want)
		}
	}
}

func TestEffectiveDoesNotChangePage(t *testing.T) {
	p := &Page{Links: []Link{{URL: mustURL(t, "https://a.example/")}}}
	e := p.Effective(Directives{NoFollow: true})
	if !e.Edges[0].Nofollow || p.Links[0].Nofollow {
		t.Errorf("Effective: edges %+v, page links %+v", e.Edges, p.Links)
	}
}
