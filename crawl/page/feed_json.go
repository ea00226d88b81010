package page

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"

	"github.com/mapthenet/mapthenet/data"
)

// readJSONFeed walks a JSON Feed (https://jsonfeed.org/version/1.1) token
// by token: home_page_url, and items[].url and items[].external_url with
// the item's title as link words, and the links of items[].content_html
// (the post), resolved against the item's url. Token by token rather than
// one Decode so that a feed cut at the size cap still yields the items
// before the cut.
func readJSONFeed(r io.Reader, feedURL *url.URL, posts *postBudget) error {
	col := posts.col
	d := json.NewDecoder(r)
	if err := expectDelim(d, '{'); err != nil {
		return err
	}
	for d.More() {
		key, err := d.Token()
		if err != nil {
			return err
		}
		switch key {
		case "home_page_url":
			s, err := jsonString(d)
			if err != nil {
				return err
			}
			if s != "" {
				col.add(s, nil, false, nil)
			}
		case "items":
			if err := readJSONItems(d, feedURL, posts); err != nil {
				return err
			}
		default:
			if err := skipJSON(d); err != nil {
				return err
			}
		}
	}
	return nil
}

func readJSONItems(d *json.Decoder, feedURL *url.URL, posts *postBudget) error {
	col := posts.col
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if tok != json.Delim('[') {
		return skipRest(d, tok)
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return err
		}
		if tok != json.Delim('{') {
			if err := skipRest(d, tok); err != nil {
				return err
			}
			continue
		}
		var urls []string
		var title, permalink, post string
		emit := func() {
			words := Words(title, data.MaxWordsPerLink)
			for _, u := range urls {
				col.add(u, nil, false, words)
			}
			// The post's relative links resolve against the item's own
			// address (its url), else the feed's.
			posts.read(post, absolute(feedURL, permalink))
		}
		for d.More() {
			key, err := d.Token()
			if err != nil {
				emit()
				return err
			}
			switch key {
			case "url", "external_url", "title", "content_html":
				s, err := jsonString(d)
				if err != nil {
					emit()
					return err
				}
				switch {
				case key == "title":
					title = s
				case key == "content_html":
					// A second content_html (not valid, but possible)
					// replaces the first, as encoding/json would.
					post = posts.clip(s)
				case s != "":
					if key == "url" && permalink == "" {
						permalink = s
					}
					urls = append(urls, s)
				}
			default:
				if err := skipJSON(d); err != nil {
					emit()
					return err
				}
			}
		}
		emit()
		if _, err := d.Token(); err != nil { // the item's '}'
			return err
		}
	}
	_, err = d.Token() // the ']'
	return err
}

func expectDelim(d *json.Decoder, want json.Delim) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	if tok != want {
		return fmt.Errorf("%w: JSON starts with %v, not %v", errNotFeed, tok, want)
	}
	return nil
}

// jsonString reads one value; a string gives its text, anything else is
// skipped and gives "".
func jsonString(d *json.Decoder) (string, error) {
	tok, err := d.Token()
	if err != nil {
		return "", err
	}
	if s, ok := tok.(string); ok {
		return s, nil
	}
	return "", skipRest(d, tok)
}

// skipJSON skips one value.
func skipJSON(d *json.Decoder) error {
	tok, err := d.Token()
	if err != nil {
		return err
	}
	return skipRest(d, tok)
}

// skipRest skips the rest of a value whose first token was tok. It counts
// depth rather than recursing, so deep nesting costs no stack.
func skipRest(d *json.Decoder, tok json.Token) error {
	depth := 0
	for {
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth <= 0 {
			return nil
		}
		var err error
		if tok, err = d.Token(); err != nil {
			return err
		}
	}
}
