package crawl

import (
	"sort"

	"github.com/mapthenet/mapthenet/data"
)

// linkSet aggregates one visit's links per target domain.
type linkSet struct {
	by map[string]*linkAgg
}

type linkAgg struct {
	followed bool // some link to it was followed
	words    []string
	pages    int // HTML pages it appeared on
}

func newLinkSet() *linkSet { return &linkSet{by: map[string]*linkAgg{}} }

func (s *linkSet) get(dst string) *linkAgg {
	a := s.by[dst]
	if a == nil {
		a = &linkAgg{}
		s.by[dst] = a
	}
	return a
}

// add records a link to dst; a new target beyond MaxLinkDomains is dropped.
func (s *linkSet) add(dst string, nofollow bool, words []string) {
	a := s.by[dst]
	if a == nil {
		if len(s.by) >= MaxLinkDomains {
			return
		}
		a = &linkAgg{}
		s.by[dst] = a
	}
	a.followed = a.followed || !nofollow
	for _, w := range words {
		if len(a.words) >= data.MaxWordsPerLink {
			break
		}
		dup := false
		for _, x := range a.words {
			if x == w {
				dup = true
				break
			}
		}
		if !dup {
			a.words = append(a.words, w)
		}
	}
}

// onPage counts a page that links dst (one add'ed: a dropped target is not counted).
func (s *linkSet) onPage(dst string) {
	if a := s.by[dst]; a != nil {
		a.pages++
	}
}

// addMoved records a home page's redirect to another site: a followed link.
func (s *linkSet) addMoved(dst string) { s.get(dst).followed = true }

// result lists the links by target; htmlPages > 0 marks as sitewide those
// on every one of that many pages (pass 0 unless the visit is complete and
// read 3 HTML pages or more).
func (s *linkSet) result(htmlPages int) []data.Link {
	if htmlPages < 3 {
		htmlPages = 0
	}
	out := make([]data.Link, 0, len(s.by))
	for dst, a := range s.by {
		out = append(out, data.Link{
			Dst:      dst,
			Nofollow: !a.followed,
			Sitewide: htmlPages > 0 && a.pages >= htmlPages,
			Words:    a.words,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Dst < out[j].Dst })
	return out
}
