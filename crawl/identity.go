package crawl

import (
	"fmt"
	"net/http"
	"net/mail"
	"net/url"
	"strings"

	"golang.org/x/net/http/httpguts"

	"github.com/mapthenet/mapthenet/crawl/fetch"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

// The operator's identity is what every request says about who runs the
// crawl: the robots.txt product token, a User-Agent naming a page about the
// bot, a contact address (From) and the key directory (Signature-Agent).
// A crawl of the real web must give all four: the built-in values name
// mapthenet.org, whose operators would get the complaints about someone
// else's crawl. They stay only for a crawl that reaches no real host, one
// whose every connection goes where a ConnectTo rule sends it (tests, the
// demo, a simulated web).

// IdentityError says which parts of the operator's identity are missing.
// Missing holds their names as flags and config keys spell them
// ("robots-token", "user-agent", "from", "signature-agent").
type IdentityError struct{ Missing []string }

func (e *IdentityError) Error() string {
	return fmt.Sprintf("crawl: no operator identity for the real web (missing %s)", strings.Join(e.Missing, ", "))
}

// MapsEveryHost reports whether rules send every connection to an address
// the operator chose: a rule with empty Host and Port (it matches every
// request) and a target host (an empty one would keep the request's own
// host, resolved as usual, so the real web would be reached).
func MapsEveryHost(rules []fetch.ConnectTo) bool {
	for _, r := range rules {
		if r.Host == "" && r.Port == "" && r.ToHost != "" {
			return true
		}
	}
	return false
}

// CheckIdentity is the check Run and NewCrawler make, for a caller to make
// before it opens anything. Errors name the parts as flags spell them.
func CheckIdentity(o Options) error {
	x := o.withDefaults()
	return x.checkIdentity()
}

// checkIdentity refuses a crawl of the real web without the operator's
// identity, and an identity a site owner could not use. It runs on
// Options after withDefaults, which fills the built-in identity in only
// when every host is mapped.
func (o *Options) checkIdentity() error {
	mapped := MapsEveryHost(o.ConnectTo)
	var missing []string
	for _, p := range []struct{ name, v string }{
		{"robots-token", o.RobotsToken}, {"user-agent", o.UserAgent},
		{"from", o.From}, {"signature-agent", o.SignatureAgentURL},
	} {
		// A mapped crawl has no default From: nobody to reach. It
		// sends none.
		if p.v == "" && !(mapped && p.name == "from") {
			missing = append(missing, p.name)
		}
	}
	if len(missing) > 0 {
		return &IdentityError{Missing: missing}
	}
	if err := CheckUserAgent(o.UserAgent, o.RobotsToken); err != nil {
		return err
	}
	if err := CheckSignatureAgent(o.SignatureAgentURL); err != nil {
		return err
	}
	if o.From != "" {
		return CheckFrom(o.From)
	}
	return nil
}

// CheckUserAgent accepts a User-Agent that a site owner can act on: it
// names the bot's page (an http or https URL) and contains the robots.txt
// product token (RFC 9309 section 2.2.1: the token SHOULD be a substring
// of the User-Agent, so that the owner knows what to write in robots.txt).
func CheckUserAgent(ua, token string) error {
	if !httpguts.ValidHeaderFieldValue(ua) || strings.TrimSpace(ua) != ua {
		return fmt.Errorf("user-agent %q: not a valid header value", ua)
	}
	if BotPage(ua) == "" {
		return fmt.Errorf("user-agent %q names no bot page: put its URL in it, such as \"ExampleBot/1.0 (+https://example.org/bot)\"", ua)
	}
	if token != "" && !strings.Contains(strings.ToLower(ua), strings.ToLower(token)) {
		return fmt.Errorf("user-agent %q does not contain the robots token %q: site owners write robots.txt for the name they see", ua, token)
	}
	return nil
}

// BotPage returns the first http(s) URL in a User-Agent ("" when none):
// the page that says what the bot does, also sent as X-Crawler-Info.
func BotPage(ua string) string {
	for _, scheme := range []string{"https://", "http://"} {
		i := strings.Index(ua, scheme)
		if i < 0 {
			continue
		}
		raw := ua[i:]
		if j := strings.IndexAny(raw, " ;)\t"); j >= 0 {
			raw = raw[:j]
		}
		if u, err := url.Parse(raw); err == nil && u.Host != "" && u.Hostname() != "" {
			return raw
		}
	}
	return ""
}

// CheckFrom accepts a bare e-mail address (RFC 9110's From field: the
// address of whoever answers for the crawl), such as crawler@example.org.
func CheckFrom(from string) error {
	a, err := mail.ParseAddress(from)
	if err != nil || a.Name != "" || a.Address != from || !strings.Contains(from[strings.LastIndex(from, "@")+1:], ".") {
		return fmt.Errorf("from %q: want an e-mail address such as crawler@example.org", from)
	}
	return nil
}

// CheckSignatureAgent accepts the URL of a key directory: https, with a
// host (verifiers fetch it; RFC 9421 signatures name it).
func CheckSignatureAgent(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
		return fmt.Errorf("signature-agent %q: want an https URL such as %s", s, webbotauth.DefaultAgentURL)
	}
	return nil
}

// DirectoryURL is where a key directory is published on host: the
// well-known path verifiers look at.
func DirectoryURL(host string) string {
	return "https://" + host + webbotauth.DirectoryPath
}

// identityHeader is what requests carry besides User-Agent: From when the
// operator gave one, X-Crawler-Info (the bot page) when asked for.
func (o *Options) identityHeader() http.Header {
	h := http.Header{}
	if o.From != "" {
		h.Set("From", o.From)
	}
	if o.CrawlerInfo {
		if p := BotPage(o.UserAgent); p != "" {
			h.Set("X-Crawler-Info", p)
		}
	}
	if len(h) == 0 {
		return nil
	}
	return h
}
