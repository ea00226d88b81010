package webbotauth

import (
	"bytes"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"time"
)

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Keys returns the current keyring. It is called on every directory
	// request, so a rotation shows at once without a restart.
	Keys func() (*Keyring, error)
	// Authority to sign the directory for; "": the request's own Host
	// (lower-cased, default port dropped).
	Authority string
	Clock     func() time.Time // nil: time.Now
	Logger    *slog.Logger     // nil: discard
	// Contact is shown on the bot page as the address for removal requests.
	Contact string
	// Token and UserAgent are the crawler's robots.txt product token and
	// User-Agent, as the bot page names them; "": MapTheNetBot's.
	Token, UserAgent string
	// RemovalPage, when set, is where the bot page sends site owners for a
	// removal token (mapthenet serve's /remove).
	RemovalPage string
}

// NewHandler serves the key directory at DirectoryPath (GET and HEAD, 200
// directly, never a redirect; If-None-Match answered with 304) and a plain
// page about the bot at "/" and "/bot". Everything else is 404.
func NewHandler(opts HandlerOptions) http.Handler {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle(DirectoryPath, &directoryHandler{opts: opts})
	page := botPage(botInfo{Contact: opts.Contact, Token: opts.Token, UserAgent: opts.UserAgent, RemovalPage: opts.RemovalPage})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" && r.URL.Path != "/bot" {
			http.NotFound(w, r)
			return
		}
		if !getOrHead(w, r) {
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		if r.Method == http.MethodGet {
			_, _ = w.Write(page)
		}
	})
	return mux
}

func getOrHead(w http.ResponseWriter, r *http.Request) bool {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return true
	}
	w.Header().Set("Allow", "GET, HEAD")
	http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	return false
}

type directoryHandler struct{ opts HandlerOptions }

func (d *directoryHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !getOrHead(w, r) {
		return
	}
	kr, err := d.opts.Keys()
	if err != nil {
		d.opts.Logger.Error("key directory: cannot load keys", "err", err)
		http.Error(w, "key directory unavailable", http.StatusInternalServerError)
		return
	}
	authority := d.opts.Authority
	if authority == "" {
		authority = RequestAuthority(r)
	}
	status, h, body := DirectoryResponse(kr, authority, d.opts.Clock())
	for k, v := range h {
		w.Header()[k] = v
	}
	if status == http.StatusOK && r.Header.Get("If-None-Match") == h.Get("Etag") {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	if r.Method == http.MethodGet {
		_, _ = w.Write(body)
	}
}

var botTemplate = template.Must(template.New("bot").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Token}}</title></head>
<body>
<h1>{{.Token}}</h1>
<p>{{.Token}} (User-Agent <code>{{.UserAgent}}</code>)
draws a map of the web's domains: it reads a few pages of each site and records only
which domains link to which. It never keeps page text, page addresses, titles or IP
addresses. It makes one request at a time per site, at least a second apart (longer if
your robots.txt asks with Crawl-delay), and reads no JavaScript, forms or logins.</p>
<p>Every request is signed with Web Bot Auth (RFC 9421 HTTP Message Signatures, Ed25519).
Our public keys are at <a href="` + DirectoryPath + `">` + DirectoryPath + `</a>.</p>
<h2>Opting out</h2>
<p>Our robots.txt token is <code>{{.Token}}</code>. To keep us out of your whole site:</p>
<pre>User-agent: {{.Token}}
Disallow: /</pre>
<p>We read robots.txt at the start of every visit. A site that shuts us out stays on the
map through the links other sites make to it, marked as opted out.</p>
<h2>Slowing us down</h2>
<p>To space our requests out, give a <code>Crawl-delay</code> (in seconds) in a robots.txt group
for <code>{{.Token}}</code>. A 429 or 503 answer stops the visit, and we come back no sooner than an
hour later, or later if your <code>Retry-After</code> says so.</p>
<h2>Removal</h2>
<p>To have your domain removed from every file we publish, for good, {{if .RemovalPage}}get a
verification token on <a href="{{.RemovalPage}}">the removal page</a>{{with .Contact}} (or ask
<a href="mailto:{{.}}">{{.}}</a>){{end}}{{else}}ask
{{with .Contact}}<a href="mailto:{{.}}">{{.}}</a>{{else}}the crawler's operator{{end}} for a verification
token{{end}} and publish it in one of three ways: a DNS TXT record
<code>mapthenet-verification=TOKEN</code> on the domain, a file at
<code>/.well-known/mapthenet-verification.txt</code> holding the token, or
<code>&lt;meta name="mapthenet-verification" content="TOKEN"&gt;</code> on your home page.</p>
</body></html>
`))

// botInfo is what the bot page says about the crawler.
type botInfo struct{ Contact, Token, UserAgent, RemovalPage string }

func botPage(info botInfo) []byte {
	if info.Token == "" {
		info.Token = "MapTheNetBot"
	}
	if info.UserAgent == "" {
		info.UserAgent = "MapTheNetBot/1.0 (+https://www.mapthenet.org/bot)"
	}
	var b bytes.Buffer
	if err := botTemplate.Execute(&b, info); err != nil {
		return []byte(info.Token + "\n")
	}
	return b.Bytes()
}
