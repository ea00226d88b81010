package page

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Word limits. A "word" longer than MaxWordLen runes is a token, a hash or
// run-together text rather than a word people use for a site: dropped.
// Single letters carry nothing: dropped.
const (
	MinWordLen = 2
	MaxWordLen = 32
	// maxAnchorText bounds the anchor text kept per anchor, so that an
	// unclosed <a> cannot gather the rest of a page.
	maxAnchorText = 1024
)

// Words splits text into link words: runs of Unicode letters (combining
// marks continue a word, so Devanagari or decomposed accents stay whole),
// NFC-normalised, lower case; anything else separates words (digits,
// punctuation, spaces, symbols). Stopwords (see stopwords.go), words shorter
// than MinWordLen or longer than MaxWordLen runes are dropped; no stemming.
// The result is distinct, in order of first appearance, at most limit words
// (limit <= 0: no limit).
func Words(text string, limit int) []string {
	// Lower-case the whole text once: words are then substrings of it,
	// with no allocation per word (letters stay letters under ToLower).
	text = strings.ToLower(text)
	var out []string
	start := -1
	flush := func(end int) bool {
		if start < 0 {
			return true
		}
		w := text[start:end]
		start = -1
		n := utf8.RuneCountInString(w)
		if n < MinWordLen || n > MaxWordLen {
			return true
		}
		if needsNFC(w) {
			w = strings.ToLower(norm.NFC.String(w))
		}
		if isStopword(w) {
			return true
		}
		for _, h := range out {
			if h == w {
				return true
			}
		}
		if out == nil {
			out = make([]string, 0, 4) // most anchors have a few words
		}
		out = append(out, w)
		return limit <= 0 || len(out) < limit
	}
	for i, r := range text {
		switch {
		case unicode.IsLetter(r):
			if start < 0 {
				start = i
			}
		case unicode.IsMark(r) && start >= 0:
			// continues the word
		default:
			if !flush(i) {
				return out
			}
		}
	}
	flush(len(text))
	return out
}

// needsNFC is a cheap pre-check for NFC normalisation: text with no code
// point at or above U+0300 (where combining marks start) is already NFC.
// It saves norm.NFC.IsNormalString, which allocates, on nearly every word.
func needsNFC(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] >= 0xCC { // UTF-8 lead bytes of U+0300 and above
			return !norm.NFC.IsNormalString(w)
		}
	}
	return false
}
