package removal

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"golang.org/x/net/html"
)

// Where the proofs live.
const (
	TXTPrefix = "mapthenet-verification="
	FilePath  = "/.well-known/mapthenet-verification.txt"
	MetaName  = "mapthenet-verification"
)

// Body caps: the file is one token; the meta tag sits in the page's head.
const (
	fileBodyLimit = 4 << 10
	pageBodyLimit = 512 << 10
)

// TXTResolver looks up TXT records; *net.Resolver is one.
type TXTResolver interface {
	LookupTXT(ctx context.Context, name string) ([]string, error)
}

// Doer sends an HTTP request; *http.Client (see NewHTTPClient) is one.
type Doer interface {
	Do(*http.Request) (*http.Response, error)
}

// Attempt is what one kind of proof found.
type Attempt struct {
	Kind   string // "dns", "file" or "meta"
	OK     bool
	Detail string // what was found, for the operator
	Proof  string // when OK: what held, as recorded with the removal
}

func (a Attempt) String() string { return a.Kind + ": " + a.Detail }

// Result is the outcome of Check.
type Result struct {
	Domain   string
	Token    string
	Attempts []Attempt // in the order tried; the last one held if Verified
}

// Verified says whether a proof held.
func (r *Result) Verified() bool {
	return len(r.Attempts) > 0 && r.Attempts[len(r.Attempts)-1].OK
}

// Proof is the proof that held ("" if none).
func (r *Result) Proof() string {
	if !r.Verified() {
		return ""
	}
	return r.Attempts[len(r.Attempts)-1].Proof
}

// Checker looks for a domain's proofs of ownership.
type Checker struct {
	Resolver TXTResolver
	Client   Doer // signed, with timeouts and a redirect policy: NewHTTPClient
}

// Check tries the proofs in order (DNS, file, meta tag) and stops at the
// first that holds. domain must be normalised.
func (c *Checker) Check(ctx context.Context, domain, token string) *Result {
	r := &Result{Domain: domain, Token: token}
	for _, try := range []func(context.Context, string, string) Attempt{c.checkDNS, c.checkFile, c.checkMeta} {
		a := try(ctx, domain, token)
		r.Attempts = append(r.Attempts, a)
		if a.OK {
			break
		}
	}
	return r
}

func (c *Checker) checkDNS(ctx context.Context, domain, token string) Attempt {
	a := Attempt{Kind: "dns"}
	if c.Resolver == nil {
		a.Detail = "no resolver"
		return a
	}
	recs, err := c.Resolver.LookupTXT(ctx, domain)
	if err != nil {
		a.Detail = "TXT lookup failed: " + err.Error()
		return a
	}
	want := TXTPrefix + token
	for _, rec := range recs {
		if strings.TrimSpace(rec) == want {
			a.OK = true
			a.Detail = "TXT record " + want + " found"
			a.Proof = "dns: TXT " + want + " on " + domain
			return a
		}
	}
	if len(recs) == 0 {
		a.Detail = "no TXT records on " + domain
		return a
	}
	a.Detail = fmt.Sprintf("TXT records found: %s, none matches %s", quoteList(recs, 10), want)
	return a
}

func (c *Checker) checkFile(ctx context.Context, domain, token string) Attempt {
	a := Attempt{Kind: "file"}
	var found []string
	for _, scheme := range []string{"https", "http"} {
		u := scheme + "://" + domain + FilePath
		body, status, err := c.get(ctx, u, fileBodyLimit)
		switch {
		case err != nil:
			found = append(found, scheme+": "+err.Error())
		case status != http.StatusOK:
			found = append(found, fmt.Sprintf("%s: %d", scheme, status))
		default:
			for _, line := range strings.Split(string(body), "\n") {
				if strings.TrimSpace(line) == token {
					a.OK = true
					a.Detail = u + " holds the token"
					a.Proof = "file: " + u
					return a
				}
			}
			found = append(found, fmt.Sprintf("%s: the file holds %s, not the token", scheme, clip(strings.TrimSpace(string(body)))))
		}
	}
	a.Detail = strings.Join(found, "; ")
	return a
}

func (c *Checker) checkMeta(ctx context.Context, domain, token string) Attempt {
	a := Attempt{Kind: "meta"}
	var found []string
	for _, scheme := range []string{"https", "http"} {
		u := scheme + "://" + domain + "/"
		body, status, err := c.get(ctx, u, pageBodyLimit)
		switch {
		case err != nil:
			found = append(found, scheme+": "+err.Error())
			continue
		case status != http.StatusOK:
			found = append(found, fmt.Sprintf("%s: home page %d", scheme, status))
			continue
		}
		contents := metaContents(body)
		for _, v := range contents {
			if strings.TrimSpace(v) == token {
				a.OK = true
				a.Detail = u + " has the meta tag"
				a.Proof = "meta: " + u
				return a
			}
		}
		if len(contents) == 0 {
			found = append(found, scheme+": home page has no "+MetaName+" meta tag")
		} else {
			found = append(found, fmt.Sprintf("%s: %s meta tags found: %s, none matches", scheme, MetaName, quoteList(contents, 5)))
		}
	}
	a.Detail = strings.Join(found, "; ")
	return a
}

// get fetches u and reads at most limit bytes of its body.
func (c *Checker) get(ctx context.Context, u string, limit int64) ([]byte, int, error) {
	if c.Client == nil {
		return nil, 0, fmt.Errorf("no HTTP client")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		return nil, 0, shortError(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return nil, resp.StatusCode, shortError(err)
	}
	return body, resp.StatusCode, nil
}

// metaContents returns the content of every <meta name="mapthenet-verification">
// (name compared case-insensitively, as HTML does) before the body ends.
func metaContents(page []byte) []string {
	z := html.NewTokenizer(strings.NewReader(string(page)))
	var out []string
	for {
		switch z.Next() {
		case html.ErrorToken:
			return out
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			if string(name) != "meta" || !hasAttr {
				continue
			}
			var n, content string
			var hasContent bool
			for {
				k, v, more := z.TagAttr()
				switch string(k) {
				case "name":
					n = string(v)
				case "content":
					content, hasContent = string(v), true
				}
				if !more {
					break
				}
			}
			if strings.EqualFold(strings.TrimSpace(n), MetaName) && hasContent {
				out = append(out, content)
			}
		}
	}
}

func clip(s string) string {
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return fmt.Sprintf("%q", s)
}

func quoteList(ss []string, max int) string {
	parts := make([]string, 0, len(ss))
	for i, s := range ss {
		if i == max {
			parts = append(parts, fmt.Sprintf("and %d more", len(ss)-max))
			break
		}
		parts = append(parts, clip(s))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
