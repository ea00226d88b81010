package site

import (
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

var templateFuncs = template.FuncMap{
	"num": func(v any) string {
		switch n := v.(type) {
		case int:
			return num(n)
		case int32:
			return num(n)
		case int64:
			return num(n)
		}
		return fmt.Sprint(v)
	},
	"move": moveText,
	"when": func(t *time.Time) string {
		if t == nil {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04 UTC")
	},
	"at":      func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") },
	"yesno":   yesNo,
	"bytes":   func(n int64) string { return num(n/1024) + " KB" },
	"pathesc": url.PathEscape,
	"add":     func(a, b int) int { return a + b },
	"deref":   func(p *int64) int64 { return *p },
}

// num writes 1234567 as 1,234,567.
func num[T int | int32 | int64](v T) string {
	s := strconv.FormatInt(int64(v), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// moveText says how a rank moved since the previous snapshot.
func moveText(move *int64, prev *int64) string {
	switch {
	case prev == nil:
		return "new"
	case move == nil:
		return "was " + num(*prev)
	case *move > 0:
		return "▲ " + num(*move)
	case *move < 0:
		return "▼ " + num(-*move)
	}
	return "="
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "unknown"
	case *b:
		return "yes"
	}
	return "no"
}

// domainView is the domain page's body.
type domainView struct {
	*domainJSON
	InPage, OutPage  pager
	PointOnMap       bool
	CommunityAddress string
}

// pager is one list's page links.
type pager struct {
	Page, Pages int
	Prev, Next  string // addresses; "" when none
}

func newPager(base url.Values, key string, page, total, per int) pager {
	p := pager{Page: page, Pages: max(1, (total+per-1)/per)}
	link := func(n int) string {
		v := url.Values{}
		for k, vs := range base {
			v[k] = vs
		}
		v.Set(key, strconv.Itoa(n))
		return "?" + v.Encode()
	}
	if page > 1 {
		p.Prev = link(page - 1)
	}
	if page < p.Pages {
		p.Next = link(page + 1)
	}
	return p
}

func pageParam(q url.Values, key string) (int, bool) {
	v := q.Get(key)
	if v == "" {
		return 1, true
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 1<<24 {
		return 0, false
	}
	return n, true
}

func (s *Server) domainPage(w http.ResponseWriter, r *http.Request) {
	ix, row := s.lookup(w, r, false)
	if ix == nil {
		return
	}
	q := r.URL.Query()
	inPage, ok1 := pageParam(q, "in")
	outPage, ok2 := pageParam(q, "out")
	if !ok1 || !ok2 {
		s.render(w, r, http.StatusBadRequest, "message.html", pageData{Title: "Bad request", Message: "in and out are page numbers (1, 2, …)."})
		return
	}
	d := ix.report(row, (inPage-1)*linksPerPage, (outPage-1)*linksPerPage, linksPerPage)
	base := url.Values{"in": {strconv.Itoa(inPage)}, "out": {strconv.Itoa(outPage)}}
	v := domainView{domainJSON: d, PointOnMap: d.Point != nil,
		InPage:  newPager(base, "in", inPage, d.InLinks.Total, linksPerPage),
		OutPage: newPager(base, "out", outPage, d.OutLinks.Total, linksPerPage)}
	s.render(w, r, http.StatusOK, "domain.html", pageData{Title: d.Domain, Domain: d.Domain, Body: v})
}

// rankingsView is the rankings page's body.
type rankingsView struct {
	Rows   []rankingRow
	Ranked int
	Pager  pager
}

func (s *Server) rankingsPage(w http.ResponseWriter, r *http.Request) {
	ix := s.index(w, r, false)
	if ix == nil {
		return
	}
	page, ok := pageParam(r.URL.Query(), "page")
	if !ok {
		s.render(w, r, http.StatusBadRequest, "message.html", pageData{Title: "Bad request", Message: "page is a page number (1, 2, …)."})
		return
	}
	v := rankingsView{Rows: ix.rankings((page-1)*rankingsPerPage, rankingsPerPage), Ranked: len(ix.byRank),
		Pager: newPager(url.Values{}, "page", page, len(ix.byRank), rankingsPerPage)}
	if len(v.Rows) == 0 && page > 1 {
		s.notFound(w, r, fmt.Sprintf("The rankings have %d pages.", v.Pager.Pages))
		return
	}
	s.render(w, r, http.StatusOK, "rankings.html", pageData{Title: "Rankings", Body: v})
}
