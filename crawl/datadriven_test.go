package crawl

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected output of testdata/visits/*.txt")

// TestVisitCases runs the visit cases in testdata/visits: each file serves
// some responses, visits a domain, and compares the requests made, the
// outcome and the links with the part after "-- want --".
//
// A response is a line "== HOST/PATH STATUS [Header: value | Header: value]"
// followed by its body lines; "== visit DOMAIN PAGES" runs the visit.
// Lines starting with "#" before the first "==" are comments. Rewrite the
// wants after a deliberate change with: go test ./crawl -run VisitCases -update
func TestVisitCases(t *testing.T) {
	files, _ := filepath.Glob("testdata/visits/*.txt")
	if len(files) == 0 {
		t.Fatal("no cases")
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			text := string(raw)
			input, want, _ := strings.Cut(text, "-- want --\n")
			w := newWeb(t)
			domain, pages := "", 8
			var cur *served
			var all []*served
			sc := bufio.NewScanner(strings.NewReader(input))
			for sc.Scan() {
				line := sc.Text()
				if rest, ok := strings.CutPrefix(line, "== "); ok {
					f := strings.Fields(rest)
					if f[0] == "visit" {
						domain = f[1]
						if len(f) > 2 {
							pages, _ = strconv.Atoi(f[2])
						}
						cur = nil
						continue
					}
					status, err := strconv.Atoi(f[1])
					if err != nil {
						t.Fatalf("%s: %q: want == HOST/PATH STATUS [headers]", file, line)
					}
					cur = &served{hostPath: f[0], status: status, header: http.Header{}}
					if _, hs, ok := strings.Cut(rest, f[1]+" "); ok {
						for _, h := range strings.Split(hs, " | ") {
							k, v, _ := strings.Cut(h, ":")
							cur.header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
						}
					}
					all = append(all, cur)
					continue
				}
				if cur != nil {
					cur.body += line + "\n"
				}
			}
			for _, s := range all {
				s := s
				w.on(s.hostPath, func(rw http.ResponseWriter, r *http.Request) {
					for k, vs := range s.header {
						for _, v := range vs {
							rw.Header().Add(k, v)
						}
					}
					rw.WriteHeader(s.status)
					rw.Write([]byte(s.body))
				})
			}
			if domain == "" {
				t.Fatalf("%s: no '== visit DOMAIN' line", file)
			}
			res, err := w.crawler(w.options()).Visit(context.Background(), domain, pages)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			b.WriteString("requests:\n")
			for _, r := range w.requests() {
				fmt.Fprintf(&b, "  %s\n", r)
			}
			fmt.Fprintf(&b, "outcome: %s\nhttp_status: %d\nrobots_status: %d\npages: %d\ncomplete: %v\nerror: %s\n",
				res.Outcome, res.HTTPStatus, res.RobotsStatus, res.Pages, res.Complete, res.Error)
			if res.RetryAfter > 0 {
				fmt.Fprintf(&b, "retry_after: %v\n", res.RetryAfter)
			}
			b.WriteString("links:\n")
			for _, l := range res.Links {
				fmt.Fprintf(&b, "  %s", l.Dst)
				if l.Nofollow {
					b.WriteString(" nofollow")
				}
				if l.Sitewide {
					b.WriteString(" sitewide")
				}
				if len(l.Words) > 0 {
					fmt.Fprintf(&b, " words=%s", strings.Join(l.Words, ","))
				}
				b.WriteString("\n")
			}
			got := b.String()
			if *update {
				if err := os.WriteFile(file, []byte(input+"-- want --\n"+got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			if got != want {
				t.Errorf("%s:\ngot:\n%s\nwant:\n%s", file, got, want)
			}
		})
	}
}

type served struct {
	hostPath string
	status   int
	header   http.Header
	body     string
}
