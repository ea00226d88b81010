package robots

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the verdicts in testdata/*.txt and the golden files from what the code does now")

// A testdata/*.txt file holds cases, each:
//
//	=== name [eol=lf|crlf|cr|mixed] [bom]
//	<robots.txt, one line a line; "@fill-to N" pads with comment lines
//	 so that the next line starts at byte N>
//	---
//	allow|disallow <agent> <url or path>
//	crawl-delay <agent> <seconds|none>
//	opted-out <agent> yes|no
//	source <agent> token|*|none
//	sitemaps <url,url,...|none>
//
// Lines starting with "#" outside a robots.txt block, and blank lines in the
// checks, are comments. With -update the verdicts are rewritten.
func TestDataDriven(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/*.txt: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			out := runCases(t, src)
			if *update {
				if err := os.WriteFile(file, out, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if !bytes.Equal(out, src) {
				t.Errorf("%s: verdicts differ (go test -run TestDataDriven -update rewrites them):\n%s", file, diffLines(string(src), string(out)))
			}
		})
	}
}

// runCases parses a testdata file, evaluates its checks and returns the
// file as it would be with every verdict replaced by the actual one.
func runCases(t *testing.T, src []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(nil, 1<<20)
	const (
		outside = iota
		inRobots
		inChecks
	)
	state := outside
	var (
		name, eol string
		bom       bool
		body      bytes.Buffer
		parsed    *Robots
		lineNo    int
		lines     int // robots.txt lines so far, for eol=mixed
	)
	for sc.Scan() {
		line := sc.Text()
		lineNo++
		if strings.HasPrefix(line, "=== ") {
			name, eol, bom = parseHeader(t, lineNo, line)
			body.Reset()
			lines = 0
			if bom {
				body.WriteString("\xEF\xBB\xBF")
			}
			state = inRobots
			out.WriteString(line + "\n")
			continue
		}
		switch state {
		case outside:
			if line != "" && !strings.HasPrefix(line, "#") {
				t.Fatalf("line %d: want a \"=== name\" case header, got %q", lineNo, line)
			}
		case inRobots:
			if line == "---" {
				parsed = Parse(body.Bytes())
				state = inChecks
				break
			}
			if n, ok := strings.CutPrefix(line, "@fill-to "); ok {
				to, err := strconv.Atoi(n)
				if err != nil {
					t.Fatalf("line %d: %v", lineNo, err)
				}
				fillTo(t, &body, to, eolFor(eol, 0))
				break
			}
			body.WriteString(line)
			body.WriteString(eolFor(eol, lines))
			lines++
		case inChecks:
			if line == "" || strings.HasPrefix(line, "#") {
				break
			}
			line = check(t, fmt.Sprintf("%s (line %d)", name, lineNo), parsed, line)
		}
		out.WriteString(line + "\n")
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func parseHeader(t *testing.T, lineNo int, line string) (name, eol string, bom bool) {
	eol = "lf"
	fields := strings.Fields(strings.TrimPrefix(line, "=== "))
	for _, f := range fields {
		switch {
		case strings.HasPrefix(f, "eol="):
			eol = strings.TrimPrefix(f, "eol=")
			if eol != "lf" && eol != "crlf" && eol != "cr" && eol != "mixed" {
				t.Fatalf("line %d: eol=%s: want lf, crlf, cr or mixed", lineNo, eol)
			}
		case f == "bom":
			bom = true
		default:
			name += f + " "
		}
	}
	return strings.TrimSpace(name), eol, bom
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

// check evaluates one check line and returns it with the actual verdict.
func check(t *testing.T, where string, r *Robots, line string) string {
	t.Helper()
	f := strings.Fields(line)
	if len(f) == 2 && f[0] == "sitemaps" {
		got := "none"
		if s := r.Sitemaps(); len(s) > 0 {
			got = strings.Join(s, ",")
		}
		if got != f[1] {
			t.Errorf("%s: sitemaps = %s, want %s", where, got, f[1])
		}
		return "sitemaps " + got
	}
	if len(f) != 3 {
		t.Fatalf("%s: want \"<verdict> <agent> <value>\", got %q", where, line)
	}
	verdict, agent, arg := f[0], f[1], f[2]
	g := r.Group(agent)
	var got string
	switch verdict {
	case "allow", "disallow":
		got = "disallow"
		if g.Allowed(pathArg(t, arg)) {
			got = "allow"
		}
		if got != verdict {
			t.Errorf("%s: %s %s: got %s, want %s", where, agent, arg, got, verdict)
		}
		return got + " " + agent + " " + arg
	case "crawl-delay":
		got = "none"
		if d, ok := g.CrawlDelay(); ok {
			got = strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
		}
	case "opted-out":
		got = "no"
		if r.OptedOut(agent) {
			got = "yes"
		}
	case "source":
		got = g.Source()
		if got == SourceNone {
			got = "none"
		}
	default:
		t.Fatalf("%s: unknown check %q", where, verdict)
	}
	if got != arg {
		t.Errorf("%s: %s %s: got %s, want %s", where, verdict, agent, got, arg)
	}
	return verdict + " " + agent + " " + got
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

func diffLines(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n  file: %s\n  got:  %s\n", i+1, a, c)
		}
	}
	return b.String()
}
