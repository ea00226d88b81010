package robots

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/internal/casetest"
)

// TestRobotsTxtCases runs the robots.txt cases in testdata/*.txt
// (internal/casetest has the file format). Commands:
//
//	parse NAME [eol=lf|crlf|cr|mixed] [bom]
//	<robots.txt, one line a line; "@fill-to N" pads with comment lines
//	 so that the next line starts at byte N>
//	----
//
//	check
//	allowed <agent> <url or path>     → allow|disallow <agent> <url>
//	crawl-delay <agent>               → crawl-delay <agent> <seconds|none>
//	opted-out <agent>                 → opted-out <agent> yes|no
//	source <agent>                    → source <agent> token|*|none
//	sitemaps                          → sitemaps <url,url,...|none>
//	----
//	<the verdicts>
//
// A check asks the robots.txt of the parse before it. After a deliberate
// change: go test ./crawl/robots -run Cases -update.
func TestRobotsTxtCases(t *testing.T) {
	casetest.Run(t, "testdata/*.txt", func(t *testing.T) casetest.Runner {
		var parsed *Robots
		return func(t *testing.T, d *casetest.TestData) string {
			switch d.Cmd {
			case "parse":
				parsed = Parse(robotsBody(t, d))
				return ""
			case "check":
				if parsed == nil {
					d.Fatalf(t, "check before any parse")
				}
				var out strings.Builder
				for _, q := range strings.Split(d.Input, "\n") {
					out.WriteString(check(t, d, parsed, q) + "\n")
				}
				return out.String()
			}
			d.Fatalf(t, "unknown command %q: want parse or check", d.Cmd)
			return ""
		}
	})
}

// robotsBody is the robots.txt a parse command's input and arguments make.
func robotsBody(t *testing.T, d *casetest.TestData) []byte {
	eol, bom := "lf", d.HasArg("bom")
	if d.HasArg("eol") {
		d.ScanArgs(t, "eol", &eol)
		if eol != "lf" && eol != "crlf" && eol != "cr" && eol != "mixed" {
			d.Fatalf(t, "eol=%s: want lf, crlf, cr or mixed", eol)
		}
	}
	var body bytes.Buffer
	if bom {
		body.WriteString("\xEF\xBB\xBF")
	}
	if d.Input == "" {
		return body.Bytes()
	}
	lines := 0 // robots.txt lines so far, for eol=mixed
	for _, line := range strings.Split(d.Input, "\n") {
		if n, ok := strings.CutPrefix(line, "@fill-to "); ok {
			to, err := strconv.Atoi(n)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			fillTo(t, &body, to, eolFor(eol, 0))
			continue
		}
		body.WriteString(line)
		body.WriteString(eolFor(eol, lines))
		lines++
	}
	return body.Bytes()
}

// eolFor returns the line ending for the next line; "mixed" cycles through
// LF, CRLF and CR.
func eolFor(eol string, n int) string {
	switch eol {
	case "crlf":
		return "\r\n"
	case "cr":
		return "\r"
	case "mixed":
		return []string{"\n", "\r\n", "\r"}[n%3]
	}
	return "\n"
}

// fillTo appends comment lines until body is exactly to bytes long.
func fillTo(t *testing.T, body *bytes.Buffer, to int, eol string) {
	t.Helper()
	for body.Len() < to {
		n := min(to-body.Len(), 200)
		if rest := to - body.Len() - n; rest > 0 && rest < len(eol)+1 {
			n -= len(eol) + 1 // leave room for a last whole line
		}
		if n < len(eol)+1 {
			t.Fatalf("@fill-to %d: cannot fill %d bytes with whole lines", to, n)
		}
		body.WriteString("#" + strings.Repeat("x", n-1-len(eol)) + eol)
	}
	if body.Len() != to {
		t.Fatalf("@fill-to %d: body already %d bytes", to, body.Len())
	}
}

// check answers one query of a check command.
func check(t *testing.T, d *casetest.TestData, r *Robots, query string) string {
	f := strings.Fields(query)
	if len(f) == 1 && f[0] == "sitemaps" {
		got := "none"
		if s := r.Sitemaps(); len(s) > 0 {
			got = strings.Join(s, ",")
		}
		return "sitemaps " + got
	}
	if len(f) < 2 {
		d.Fatalf(t, "%q: want \"<query> <agent> [url]\"", query)
	}
	verb, agent := f[0], f[1]
	g := r.Group(agent)
	var got string
	switch {
	case verb == "allowed" && len(f) == 3:
		got = "disallow"
		if g.Allowed(pathArg(t, f[2])) {
			got = "allow"
		}
		return got + " " + agent + " " + f[2]
	case len(f) != 2:
		d.Fatalf(t, "%q: want \"%s <agent>\"", query, verb)
	case verb == "crawl-delay":
		got = "none"
		if d, ok := g.CrawlDelay(); ok {
			got = strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
		}
	case verb == "opted-out":
		got = "no"
		if r.OptedOut(agent) {
			got = "yes"
		}
	case verb == "source":
		got = g.Source()
		if got == SourceNone {
			got = "none"
		}
	default:
		d.Fatalf(t, "unknown query %q: want allowed, crawl-delay, opted-out, source or sitemaps", query)
	}
	return verb + " " + agent + " " + got
}

// pathArg turns a check's URL into what Allowed takes: an absolute URL by
// PathOf, anything else as written (so raw paths can be tested).
func pathArg(t *testing.T, arg string) string {
	if !strings.Contains(arg, "://") {
		return arg
	}
	u, err := url.Parse(arg)
	if err != nil {
		t.Fatalf("%s: %v", arg, err)
	}
	return PathOf(u)
}
