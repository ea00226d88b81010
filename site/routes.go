package site

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/domain"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

var templates = template.Must(template.New("").Funcs(templateFuncs).ParseFS(templateFS, "templates/*.html"))

// staticFile is an embedded file served under /static/: its type, its
// body gzipped once, and an ETag of its content (the map page names each
// with ?v=ETag, so that browsers may keep them).
type staticFile struct {
	typ  string
	body blob
	etag string
}

var statics = loadStatics()

func loadStatics() map[string]*staticFile {
	out := map[string]*staticFile{}
	var walk func(dir string)
	walk = func(dir string) {
		entries, err := staticFS.ReadDir(dir)
		if err != nil {
			panic(err)
		}
		for _, e := range entries {
			p := dir + "/" + e.Name()
			if e.IsDir() {
				walk(p)
				continue
			}
			raw, err := staticFS.ReadFile(p)
			if err != nil {
				panic(err)
			}
			b, err := makeBlob(raw)
			if err != nil {
				panic(err)
			}
			sum := sha256.Sum256(raw)
			typ := mime.TypeByExtension(path.Ext(p))
			if typ == "" {
				typ = "text/plain; charset=utf-8"
			}
			out[strings.TrimPrefix(p, "static/")] = &staticFile{typ: typ, body: b, etag: hex.EncodeToString(sum[:8])}
		}
	}
	walk("static")
	return out
}

func (s *Server) routes() {
	m := http.NewServeMux()
	bot := webbotauth.NewHandler(s.opts.Bot)
	m.Handle("GET /bot", bot)
	m.Handle("GET "+webbotauth.DirectoryPath, bot)
	m.HandleFunc("GET /{$}", s.mapPage)
	m.HandleFunc("GET /static/{file...}", s.static)
	m.HandleFunc("GET /api/map/meta.json", s.mapBlob(func(p *mapPayload) blob { return p.meta }, "application/json"))
	m.HandleFunc("GET /api/map/points.bin", s.mapBlob(func(p *mapPayload) blob { return p.points }, "application/octet-stream"))
	m.HandleFunc("GET /api/map/details.bin", s.mapBlob(func(p *mapPayload) blob { return p.details }, "application/octet-stream"))
	m.HandleFunc("GET /api/map/names.txt", s.mapBlob(func(p *mapPayload) blob { return p.names }, "text/plain; charset=utf-8"))
	m.HandleFunc("GET /api/snapshot", s.apiSnapshot)
	m.HandleFunc("GET /api/search", s.apiSearch)
	m.HandleFunc("GET /api/rankings", s.apiRankings)
	m.HandleFunc("GET /api/d/{domain}", s.apiDomain)
	m.HandleFunc("GET /api/d/{domain}/links", s.apiLinks)
	m.HandleFunc("GET /rankings", s.rankingsPage)
	m.HandleFunc("GET /d/{domain}", s.domainPage)
	m.HandleFunc("GET /remove", s.removeForm)
	m.HandleFunc("GET /remove/{domain}", s.removePage)
	m.HandleFunc("POST /remove/{domain}/check", s.removeCheck)
	m.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		writeJSONError(w, http.StatusNotFound, "no such API route")
	})
	m.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.notFound(w, r, "There is no page at this address.")
	})
	s.mux = m
}

// ServeHTTP sets the security headers every response carries, then routes.
// Pages run no inline script and load nothing from elsewhere, so the
// content security policy allows only this origin.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	s.mux.ServeHTTP(w, r)
}

// index is the snapshot to answer from, or nil after writing 503.
func (s *Server) index(w http.ResponseWriter, r *http.Request, api bool) *Index {
	ix := s.cur.Load()
	if ix == nil {
		w.Header().Set("Retry-After", "60")
		msg := "No snapshot yet: the map appears after the first rebuild."
		if api {
			writeJSONError(w, http.StatusServiceUnavailable, msg)
		} else {
			s.render(w, r, http.StatusServiceUnavailable, "message.html", pageData{Title: "Not yet", Message: msg})
		}
	}
	return ix
}

// domainParam takes the {domain} of the path as the snapshot names it. A
// name that is not a registrable domain is a 404 page; one that reduces to
// another (upper case, a host under it, a Unicode name) is redirected to
// that domain's address. ok is false when a response was written.
func (s *Server) domainParam(w http.ResponseWriter, r *http.Request, api bool) (name string, ok bool) {
	raw := r.PathValue("domain")
	d, err := domain.Normalize(raw)
	if len(raw) > 300 || err != nil {
		s.notFoundDomain(w, r, api, raw, "is not a domain name")
		return "", false
	}
	if d != raw {
		u := *r.URL
		u.Path = strings.Replace(r.URL.Path, "/"+raw, "/"+d, 1)
		u.RawPath = ""
		http.Redirect(w, r, u.String(), http.StatusMovedPermanently)
		return "", false
	}
	return d, true
}

func (s *Server) notFoundDomain(w http.ResponseWriter, r *http.Request, api bool, name, why string) {
	if api {
		writeJSONError(w, http.StatusNotFound, strconv.Quote(clip(name, 80))+" "+why)
		return
	}
	s.render(w, r, http.StatusNotFound, "notfound.html", pageData{Title: "Not found", Domain: clip(name, 80), Message: why})
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request, msg string) {
	s.render(w, r, http.StatusNotFound, "notfound.html", pageData{Title: "Not found", Message: msg})
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// pageData is what every page template gets.
type pageData struct {
	Title    string
	Snapshot string
	AsOf     string
	Domain   string
	Message  string
	Static   map[string]string // file → ETag, for cache-busting addresses
	Body     any
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, name string, d pageData) {
	if ix := s.cur.Load(); ix != nil && d.Snapshot == "" {
		d.Snapshot, d.AsOf = ix.ID, ix.AsOf.UTC().Format("2006-01-02 15:04 UTC")
	}
	d.Static = staticVersions
	b := getBuffer()
	defer putBuffer(b)
	if err := templates.ExecuteTemplate(b, name, d); err != nil {
		s.log.Error("rendering a page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	writeMaybeGzip(w, r, status, b.Bytes())
}

// Buffers and gzip writers are reused between responses: a gzip writer
// allocates a megabyte of tables, which was most of a domain page's cost.
// klauspost/compress's gzip rather than the standard library's: the same
// format, at half the CPU time a page at its fastest level.
var (
	buffers     = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	gzipWriters = sync.Pool{New: func() any {
		w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		return w
	}}
)

func getBuffer() *bytes.Buffer { return buffers.Get().(*bytes.Buffer) }

// putBuffer gives b back, unless it grew past what a page needs (the
// pool would hold on to it).
func putBuffer(b *bytes.Buffer) {
	if b.Cap() <= 1<<20 {
		b.Reset()
		buffers.Put(b)
	}
}

var staticVersions = func() map[string]string {
	m := map[string]string{}
	for k, v := range statics {
		m[k] = v.etag
	}
	return m
}()

// writeMaybeGzip writes body, gzipped when the client takes it and the
// body is big enough to gain.
func writeMaybeGzip(w http.ResponseWriter, r *http.Request, status int, body []byte) {
	w.Header().Add("Vary", "Accept-Encoding")
	if len(body) < 1024 || !acceptsGzip(r) {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(status)
		if r.Method != http.MethodHead {
			_, _ = w.Write(body)
		}
		return
	}
	b := getBuffer()
	defer putBuffer(b)
	zw := gzipWriters.Get().(*gzip.Writer)
	zw.Reset(b)
	_, _ = zw.Write(body)
	_ = zw.Close()
	zw.Reset(io.Discard)
	gzipWriters.Put(zw)
	w.Header().Set("Content-Encoding", "gzip")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(params, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// writeBlob writes a body made once: a gzipped one as it is to a client
// that takes gzip, decompressed on the way otherwise.
func writeBlob(w http.ResponseWriter, r *http.Request, b blob, typ, etag, cache string) {
	h := w.Header()
	h.Set("Content-Type", typ)
	h.Set("Cache-Control", cache)
	h.Set("ETag", `"`+etag+`"`)
	h.Add("Vary", "Accept-Encoding")
	if match := r.Header.Get("If-None-Match"); match != "" && strings.Contains(match, `"`+etag+`"`) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if !b.gzipped || acceptsGzip(r) {
		if b.gzipped {
			h.Set("Content-Encoding", "gzip")
		}
		h.Set("Content-Length", strconv.Itoa(len(b.body)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(b.body)
		}
		return
	}
	h.Set("Content-Length", strconv.Itoa(b.size))
	if r.Method == http.MethodHead {
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(b.body))
	if err == nil {
		_, _ = io.Copy(w, zr)
	}
}

func (s *Server) static(w http.ResponseWriter, r *http.Request) {
	f, ok := statics[r.PathValue("file")]
	if !ok {
		s.notFound(w, r, "There is no such file.")
		return
	}
	cache := "no-cache"
	if r.URL.Query().Get("v") == f.etag {
		cache = "public, max-age=31536000, immutable"
	}
	writeBlob(w, r, f.body, f.typ, f.etag, cache)
}

// mapBlob serves one of the map's payloads. Each names its snapshot in
// X-Mapthenet-Snapshot, so that the page can tell a snapshot that changed
// between two of its requests and start again.
func (s *Server) mapBlob(part func(*mapPayload) blob, typ string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ix := s.index(w, r, true)
		if ix == nil {
			return
		}
		w.Header().Set("X-Mapthenet-Snapshot", ix.ID)
		cache := "no-cache"
		if r.URL.Query().Get("s") == ix.ID {
			cache = "public, max-age=86400"
		}
		writeBlob(w, r, part(ix.mapData), typ, ix.ID+"-"+path.Base(r.URL.Path), cache)
	}
}

func (s *Server) mapPage(w http.ResponseWriter, r *http.Request) {
	if s.index(w, r, false) == nil {
		return
	}
	s.render(w, r, http.StatusOK, "map.html", pageData{Title: "Map"})
}

// writeJSON writes v as the API's JSON.
func writeJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	b := getBuffer()
	defer putBuffer(b)
	if err := json.NewEncoder(b).Encode(v); err != nil { // Encode ends with a newline
		writeJSONError(w, http.StatusInternalServerError, "encoding the answer failed")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	writeMaybeGzip(w, r, status, b.Bytes())
}

func writeJSONError(w http.ResponseWriter, status int, msg string) {
	raw, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(raw, '\n'))
}

// intParam reads a non-negative integer query parameter, def when absent;
// ok is false for anything else.
func intParam(q url.Values, name string, def, maxVal int) (int, bool) {
	v := q.Get(name)
	if v == "" {
		return def, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, false
	}
	return min(n, maxVal), true
}

var errBadParam = errors.New("bad parameter")
