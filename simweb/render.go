package simweb

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"html"
	"image"
	"image/png"
	"math/rand/v2"
	"strings"
)

// vocabulary is what anchor texts are made of: few words, so that link
// words aggregate across sites; none of them a stopword.
var vocabulary = []string{
	"garden", "recipes", "bicycle", "music", "history", "photography", "travel",
	"science", "poetry", "linux", "coffee", "knitting", "astronomy", "chess",
	"pottery", "birds", "maps", "trains", "sailing", "climbing", "baking", "jazz",
	"films", "comics", "weather", "books", "games", "design", "blog", "notes",
}

// anchorText draws an anchor text: one or two vocabulary words, sometimes
// capitalised, with a stopword or punctuation that link words drop.
func anchorText(r *rand.Rand) string {
	w1 := vocabulary[r.IntN(len(vocabulary))]
	w2 := vocabulary[r.IntN(len(vocabulary))]
	switch r.IntN(6) {
	case 0:
		return w1 + " " + w2
	case 1:
		return "The " + upperFirst(w1)
	case 2:
		return upperFirst(w1) + " and " + w2
	case 3:
		return upperFirst(w1) + "!"
	default:
		return w1
	}
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// fillerParagraphs are the prose between links, cycled.
var fillerParagraphs = func() []string {
	r := rand.New(rand.NewPCG(7, 7))
	out := make([]string, 16)
	for i := range out {
		var b strings.Builder
		b.WriteString("<p>")
		for b.Len() < 180 {
			b.WriteString(vocabulary[r.IntN(len(vocabulary))])
			b.WriteString(" ")
		}
		b.WriteString("lorem ipsum.</p>\n")
		out[i] = b.String()
	}
	return out
}()

func writeFiller(b *bytes.Buffer, n, salt int) {
	for start, i := b.Len(), salt; b.Len()-start < n; i++ {
		b.WriteString(fillerParagraphs[i%len(fillerParagraphs)])
	}
}

// pngPixel is a 1×1 PNG.
var pngPixel = func() []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))) // writing to memory cannot fail
	return b.Bytes()
}()

// rendered returns the page's body (gzip-encoded when gz and the page
// allows it), rendering it once.
func (p *page) rendered(gz bool) ([]byte, bool) {
	p.once.Do(p.render)
	if gz && p.gzip {
		p.gzOnce.Do(func() {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			_, _ = zw.Write(p.body) // writing to memory cannot fail
			_ = zw.Close()
			p.gzBody = z.Bytes()
		})
		return p.gzBody, true
	}
	return p.body, false
}

// large reports whether the page may pass MaxBodyBytes: only then do its
// links' positions matter.
func (p *page) large() bool {
	n := 0
	for _, s := range p.sections {
		n += s.filler
	}
	return n > MaxBodyBytes/2
}

func (p *page) render() {
	var b bytes.Buffer
	switch p.kind {
	case pageRaw:
		b.Write(p.raw)
	case pageHTML:
		p.linkEnds = renderHTML(&b, p)
	case pageRSS:
		renderRSS(&b, p)
	case pageAtom:
		renderAtom(&b, p)
	case pageJSONFeed:
		renderJSONFeed(&b, p)
	}
	p.body = b.Bytes()
}

var esc = html.EscapeString

func writeLink(b *bytes.Buffer, l link) {
	b.WriteString(`<a href="`)
	b.WriteString(esc(l.href))
	b.WriteString(`"`)
	if l.rel != "" {
		b.WriteString(` rel="`)
		b.WriteString(esc(l.rel))
		b.WriteString(`"`)
	}
	b.WriteString(">")
	b.WriteString(esc(l.text))
	b.WriteString("</a>")
}

// renderHTML writes an HTML page and returns where each link ends.
func renderHTML(b *bytes.Buffer, p *page) []int {
	var ends []int
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>")
	b.WriteString(esc(p.title))
	b.WriteString("</title>\n")
	for _, m := range p.metas {
		b.WriteString(`<meta name="` + esc(m[0]) + `" content="` + esc(m[1]) + "\">\n")
	}
	if p.feed != nil {
		b.WriteString(`<link rel="alternate" type="` + p.feed.typ + `" title="Feed" href="` + p.feed.href + "\">\n")
	}
	b.WriteString("<link rel=\"stylesheet\" href=\"/style.css\">\n</head>\n<body>\n<nav>")
	for i, l := range p.nav {
		if i > 0 {
			b.WriteString(" | ")
		}
		writeLink(b, l)
		ends = append(ends, b.Len())
	}
	b.WriteString("</nav>\n<main>\n<h1>" + esc(p.title) + "</h1>\n<img src=\"/img/header.png\" alt=\"\">\n")
	for i, s := range p.sections {
		writeFiller(b, s.filler, i+len(p.title))
		if len(s.links) > 0 {
			b.WriteString("<ul>\n")
			for _, l := range s.links {
				b.WriteString("<li>")
				writeLink(b, l)
				ends = append(ends, b.Len())
				b.WriteString("</li>\n")
			}
			b.WriteString("</ul>\n")
		}
	}
	b.WriteString("</main>\n</body></html>\n")
	return ends
}

// postHTML renders a post's links as HTML, between a few words.
func postHTML(fp feedPost) string {
	var b bytes.Buffer
	b.WriteString("<p>A post.</p>\n<p>")
	for _, l := range fp.links {
		b.WriteString("See ")
		writeLink(&b, l)
		b.WriteString(". ")
	}
	b.WriteString("</p>\n")
	return b.String()
}

// postsOf returns the posts of item i.
func (p *page) postsOf(i int) []feedPost {
	var out []feedPost
	for _, fp := range p.posts {
		if fp.item == i {
			out = append(out, fp)
		}
	}
	return out
}

func renderRSS(b *bytes.Buffer, p *page) {
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>` + "\n<rss version=\"2.0\"")
	if len(p.posts) > 0 {
		b.WriteString(` xmlns:content="http://purl.org/rss/1.0/modules/content/"`)
	}
	b.WriteString("><channel>\n<title>" + esc(p.title) + "</title>\n")
	b.WriteString("<description>Posts</description>\n")
	for i, l := range p.items {
		b.WriteString("<item><title>" + esc(l.text) + "</title><link>" + esc(l.href) + "</link><guid>" + esc(l.href) + "</guid>")
		for _, fp := range p.postsOf(i) {
			if fp.form == postCDATA {
				b.WriteString("<content:encoded><![CDATA[" + postHTML(fp) + "]]></content:encoded>")
			} else {
				b.WriteString("<description>" + esc(postHTML(fp)) + "</description>")
			}
		}
		b.WriteString("</item>\n")
	}
	b.WriteString("</channel></rss>\n")
}

func renderAtom(b *bytes.Buffer, p *page) {
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>` + "\n" + `<feed xmlns="http://www.w3.org/2005/Atom">` + "\n")
	b.WriteString("<title>" + esc(p.title) + "</title><id>urn:simweb:" + esc(p.title) + "</id><updated>2026-01-01T00:00:00Z</updated>\n")
	for i, l := range p.items {
		b.WriteString("<entry><title>" + esc(l.text) + `</title><link href="` + esc(l.href) + `"/><id>` + esc(l.href) +
			"</id><updated>2026-01-01T00:00:00Z</updated>")
		for _, fp := range p.postsOf(i) {
			base := ""
			if fp.base != "" {
				base = ` xml:base="` + esc(fp.base) + `"`
			}
			if fp.form == postXHTML {
				b.WriteString(`<summary type="xhtml"` + base + `><div xmlns="http://www.w3.org/1999/xhtml">` + postHTML(fp) + "</div></summary>")
			} else {
				b.WriteString(`<content type="html"` + base + ">" + esc(postHTML(fp)) + "</content>")
			}
		}
		b.WriteString("</entry>\n")
	}
	b.WriteString("</feed>\n")
}

func renderJSONFeed(b *bytes.Buffer, p *page) {
	type item struct {
		ID          string `json:"id"`
		URL         string `json:"url"`
		Title       string `json:"title"`
		ContentHTML string `json:"content_html,omitempty"`
	}
	f := struct {
		Version string `json:"version"`
		Title   string `json:"title"`
		Items   []item `json:"items"`
	}{Version: "https://jsonfeed.org/version/1.1", Title: p.title, Items: []item{}}
	for i, l := range p.items {
		it := item{ID: l.href, URL: l.href, Title: l.text}
		for _, fp := range p.postsOf(i) {
			it.ContentHTML += postHTML(fp)
		}
		f.Items = append(f.Items, it)
	}
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(f) // strings only: cannot fail
}

// Fixed answers.
const (
	cfChallengeBody = `<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>` +
		`<meta http-equiv="Content-Type" content="text/html; charset=UTF-8"><meta name="robots" content="noindex,nofollow">` +
		`</head><body><div class="main-wrapper" role="main"><div class="main-content"><h1 class="zone-name-title h1">%s</h1>` +
		`<h2 id="challenge-running" class="h2">Checking if the site connection is secure</h2>` +
		`<noscript><div class="h2"><span id="challenge-error-text">Enable JavaScript and cookies to continue</span></div></noscript>` +
		`</div></div><script>(function(){window._cf_chl_opt={cvId: '3',cZone: "%s",cType: 'managed'};` +
		`var cpo=document.createElement('script');cpo.src='/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1';` +
		`document.getElementsByTagName('head')[0].appendChild(cpo);}());</script></body></html>` + "\n"
	genericChallengeBody = `<!DOCTYPE html><html><head><title>Just a moment...</title></head><body>` +
		`<h1>Just a moment...</h1><p>Checking your browser before accessing %s.</p>` +
		`<p>This process is automatic. Your browser will redirect to your requested content shortly.</p>` +
		`<p>Please allow up to 5 seconds&hellip;</p></body></html>` + "\n"
	throttleBody = "<!doctype html><title>Too Many Requests</title><h1>Too Many Requests</h1>\n"
	notFoundBody = "<!doctype html><title>Not Found</title><h1>Not Found</h1>\n"
)
