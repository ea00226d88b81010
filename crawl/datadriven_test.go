package crawl

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/internal/casetest"
)

// TestVisitCases runs the visit cases in testdata/visits: each file serves
// some responses on a loopback web, visits a domain and compares the
// requests made, the outcome and the links with the expected output.
// Commands (internal/casetest has the file format):
//
//	serve HOST/PATH [stall]
//	HTTP/1.1 STATUS REASON          the response, as on the wire
//	Header: value
//	                                a blank line, then the body
//	body lines
//	----
//
//	visit DOMAIN [pages=N] [timeout=DURATION] [no-such-host=(HOST, ...)]
//	----
//	requests, outcome, links …
//
// A host's paths not served answer 404. stall: the response's body is sent
// and then the connection hangs (a body that breaks off with a timeout).
// timeout is the response timeout (default 2s). After a deliberate change:
// go test ./crawl -run VisitCases -update.
func TestVisitCases(t *testing.T) {
	casetest.Run(t, "testdata/visits/*.txt", func(t *testing.T) casetest.Runner {
		w := newWeb(t)
		return func(t *testing.T, d *casetest.TestData) string {
			switch d.Cmd {
			case "serve":
				w.serveCase(t, d)
				return ""
			case "visit":
				return w.visitCase(t, d)
			}
			d.Fatalf(t, "unknown command %q: want serve or visit", d.Cmd)
			return ""
		}
	})
}

// serveCase sets up the handler of one "serve" command.
func (w *web) serveCase(t *testing.T, d *casetest.TestData) {
	if len(d.CmdArgs) == 0 {
		d.Fatalf(t, "serve: want a HOST/PATH")
	}
	hostPath, stall := d.CmdArgs[0].Key, d.HasArg("stall")
	msg := casetest.Text(d)
	if !strings.Contains(msg, "\n\n") {
		msg += "\n" // a response with no body: the blank line that ends its header
	}
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(msg)), nil)
	if err != nil {
		d.Fatalf(t, "serve %s: not an HTTP response: %v", hostPath, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		d.Fatalf(t, "serve %s: %v", hostPath, err)
	}
	w.on(hostPath, func(rw http.ResponseWriter, r *http.Request) {
		for k, vs := range resp.Header {
			for _, v := range vs {
				rw.Header().Add(k, v)
			}
		}
		rw.WriteHeader(resp.StatusCode)
		rw.Write(body)
		if stall {
			rw.(http.Flusher).Flush()
			<-r.Context().Done()
		}
	})
}

// visitCase runs one "visit" command and renders what it gave.
func (w *web) visitCase(t *testing.T, d *casetest.TestData) string {
	if len(d.CmdArgs) == 0 {
		d.Fatalf(t, "visit: want a DOMAIN")
	}
	domain, pages := d.CmdArgs[0].Key, 8
	opts := w.options()
	if d.HasArg("pages") {
		d.ScanArgs(t, "pages", &pages)
	}
	if d.HasArg("timeout") {
		var s string
		d.ScanArgs(t, "timeout", &s)
		timeout, err := time.ParseDuration(s)
		if err != nil {
			d.Fatalf(t, "timeout: %v", err)
		}
		opts.ResponseTimeout = timeout
	}
	if arg, ok := d.Arg("no-such-host"); ok {
		missing := map[string]bool{}
		for _, h := range arg.Vals {
			missing[h] = true
		}
		opts.Resolver = stubResolver{missing: missing}
	}
	first := len(w.requests())
	res, err := w.crawler(opts).Visit(context.Background(), domain, pages)
	if err != nil {
		d.Fatalf(t, "visit %s: %v", domain, err)
	}
	var b strings.Builder
	b.WriteString("requests:\n")
	for _, r := range w.requests()[first:] {
		fmt.Fprintf(&b, "  %s\n", r)
	}
	fmt.Fprintf(&b, "outcome: %s\nhttp_status: %d\nrobots_status: %d\npages: %d\ncomplete: %v\n",
		res.Outcome, res.HTTPStatus, res.RobotsStatus, res.Pages, res.Complete)
	https := "unknown"
	if res.HTTPS != nil {
		https = fmt.Sprint(*res.HTTPS)
	}
	fmt.Fprintf(&b, "https: %s\n", https)
	if res.OptedOut {
		b.WriteString("opted_out: true\n")
	}
	b.WriteString(strings.TrimSpace("error: "+res.Error) + "\n")
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
	return b.String()
}
