package page

import (
	"net/url"
	"path"
	"strings"
)

// Skip reports whether a link's path extension says the resource is not
// HTML, so that it is never requested (DESIGN.md: images, PDF, archives,
// media …). A path without an extension, or with one not in the table
// (.html, .php, .asp …), is not skipped: the response's Content-Type decides
// then. Feed and data extensions (.xml, .rss, .atom, .json) are skipped
// too: a feed is read only when a page advertises it (Classify), and
// advertised feeds are requested without asking Skip.
func Skip(u *url.URL) bool {
	if u == nil {
		return true
	}
	ext := path.Ext(u.Path)
	if len(ext) < 2 || len(ext) > 8 {
		return false
	}
	_, skip := skipExt[strings.ToLower(ext[1:])]
	return skip
}

// skipExt lists extensions of resources that are never HTML or feeds.
var skipExt = func() map[string]struct{} {
	m := make(map[string]struct{}, 160)
	for _, list := range []string{
		// images
		"jpg jpeg jpe jfif pjpeg png apng gif webp bmp svg svgz ico cur tif tiff avif heic heif jxl psd ai eps raw cr2 nef dng xcf",
		// documents
		"pdf doc docx docm dot dotx xls xlsx xlsm xlsb ppt pptx pps ppsx odt ods odp odg rtf epub mobi azw azw3 djvu ps tex txt md csv tsv vcf ics",
		// archives and packages
		"zip tar gz tgz bz2 tbz tbz2 xz txz lz lzma zst 7z rar cab arj z iso img dmg exe msi msix bin apk aab ipa deb rpm pkg jar war appimage snap whl gem crx xpi torrent",
		// audio and video
		"mp3 wav ogg oga ogv opus flac aac m4a m4b m4v mp4 mov avi mkv webm wmv wma flv f4v mpg mpeg m2ts ts 3gp 3g2 mid midi aiff amr m3u m3u8 pls",
		// fonts, styles, scripts and other page assets
		"woff woff2 ttf otf eot css js mjs cjs map wasm swf",
		// feeds and data: read only as advertised feeds, which bypass Skip
		"xml rss atom rdf json jsonld xsl xslt",
		// data and code
		"sql db sqlite mdb dat bak parquet arrow csv gpx kml kmz shp dwg dxf stl obj",
	} {
		for _, e := range strings.Fields(list) {
			m[e] = struct{}{}
		}
	}
	return m
}()
