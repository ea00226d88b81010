package page

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/internal/casetest"
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

// TestXRobotsTagCases runs testdata/xrobots.txt: each x-robots-tag command
// is one response's header values, one a line (a value in double quotes is
// a Go string, for the white space around it), token=NAME for another
// robots token; the output is the directives read.
func TestXRobotsTagCases(t *testing.T) {
	casetest.Run(t, "testdata/xrobots.txt", func(t *testing.T) casetest.Runner {
		return func(t *testing.T, d *casetest.TestData) string {
			if d.Cmd != "x-robots-tag" {
				d.Fatalf(t, "unknown command %q: want x-robots-tag", d.Cmd)
			}
			token := ""
			d.MaybeScanArgs(t, "token", &token)
			var values []string
			if d.Input != "" {
				for _, v := range strings.Split(d.Input, "\n") {
					if strings.HasPrefix(v, `"`) {
						var err error
						if v, err = strconv.Unquote(v); err != nil {
							d.Fatalf(t, "%s: %v", v, err)
						}
					}
					values = append(values, v)
				}
			}
			return fmtDirectives(ParseXRobotsTag(values, token))
		}
	})
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
