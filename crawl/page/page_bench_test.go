package page

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// typicalPage builds a page like the ones the crawler reads most: about
// 50 KB with 200 links (navigation, article links to other sites, a
// footer), a script and a style sheet inline, UTF-8.
func typicalPage() []byte {
	var b strings.Builder
	b.WriteString(`<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<title>A typical article page</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="index, follow">
<link rel="stylesheet" href="/css/site.css"><link rel="alternate" type="application/rss+xml" href="/feed.xml">
<style>` + strings.Repeat("body{margin:0;font:16px/1.5 sans-serif}.nav a{color:#333} ", 40) + `</style>
<script>` + strings.Repeat("window.dataLayer=window.dataLayer||[];function gtag(){dataLayer.push(arguments)} ", 40) + `</script>
</head><body><header><nav class="nav"><ul>`)
	links := 0
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, `<li><a href="/section/%d/">Section number %d</a></li>`, i, i)
		links++
	}
	b.WriteString(`</ul></nav></header><main><article><h1>The headline of the article</h1>`)
	para := `Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore
et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip. `
	for i := 0; links < 180; i++ {
		fmt.Fprintf(&b, "<p>%s", para)
		for j := 0; j < 4; j++ {
			rel := ""
			if j == 3 {
				rel = ` rel="nofollow noopener"`
			}
			fmt.Fprintf(&b, `<a href="https://site%d.example/articles/%d?ref=x"%s>Interesting <em>story</em> about topic %d</a>, `, i*4+j, j, rel, j)
			links++
		}
		b.WriteString("</p>\n")
	}
	b.WriteString(`</article></main><footer>`)
	for ; links < 200; links++ {
		fmt.Fprintf(&b, `<a href="/about/page-%d.html"><img src="/i/%d.png" alt="Footer icon"> About</a> `, links, links)
	}
	b.WriteString(`</footer></body></html>`)
	for b.Len() < 50<<10 {
		b.WriteString("<!-- padding comment to reach a typical page size -->\n")
	}
	return []byte(b.String())
}

func TestTypicalPage(t *testing.T) {
	page := typicalPage()
	p, err := ReadHTML(bytes.NewReader(page), "text/html; charset=utf-8", fuzzBase)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Links) != 200 || len(page) < 50<<10 || len(page) > 52<<10 {
		t.Errorf("typical page: %d bytes, %d links; want ~50 KB and 200", len(page), len(p.Links))
	}
}

// BenchmarkReadHTML reads the typical page: MB/s of HTML and links/s.
func BenchmarkReadHTML(b *testing.B) {
	page := typicalPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	links := 0
	for b.Loop() {
		p, err := ReadHTML(bytes.NewReader(page), "text/html; charset=utf-8", fuzzBase)
		if err != nil {
			b.Fatal(err)
		}
		links += len(p.Links)
	}
	b.ReportMetric(float64(links)/b.Elapsed().Seconds(), "links/s")
}

// BenchmarkReadHTMLWindows1252 is the same page through a charset decoder.
func BenchmarkReadHTMLWindows1252(b *testing.B) {
	page := typicalPage()
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadHTML(bytes.NewReader(page), "text/html; charset=windows-1252", fuzzBase); err != nil {
			b.Fatal(err)
		}
	}
}
