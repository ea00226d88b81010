package site

import (
	"fmt"
	"github.com/mapthenet/mapthenet/snapshot"
	"html"
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
	"move":    moveText,
	"when":    when,
	"at":      at,
	"yesno":   yesNo,
	"bytes":   func(n int64) string { return num(n/1024) + " KB" },
	"pathesc": url.PathEscape,
	"add":     func(a, b int) int { return a + b },
	"deref":   func(p *int64) int64 { return *p },
}

func when(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return at(*t)
}

func at(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

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

// domainView is the domain page's body: the report with what the page
// shows of it written out here, so that the template only prints fields
// (a function called from a template is a reflect call, and the link
// lists have a hundred items).
type domainView struct {
	Domain, Rank, Move, Score  string // Rank "": unranked
	Tier, RevisitDays, Pages   int32
	InDomains, OutDomains      string
	Community                  *communityJSON
	CommunitySize              string
	LinkWords                  []snapshot.LinkWordJSON
	HTTPS, IPv6, Operator, ASN string
	OptedOut                   bool
	FirstSeen, LastVisit       string
	LastOutcome, LastStatus    string
	Failures                   int32
	NextVisit                  string // "": not scheduled
	InLinks, OutLinks          linkList
	Visits                     []visitView
	InPage, OutPage            pager
	PointOnMap                 bool
}

// linkList is one list of links, its items written out as HTML here:
// through the template, each of a hundred items' fields cost a reflect
// call to its escaper.
type linkList struct {
	Total, Nofollow string // Nofollow "": none
	Start           int
	Items           template.HTML // <li> items; "" when none
}

type visitView struct {
	Started, Outcome, Status, Pages, Read, Error string
}

func newDomainView(d *domainJSON) *domainView {
	v := &domainView{Domain: d.Domain, Score: fmt.Sprintf("%.4g", d.Score), Tier: d.Tier, RevisitDays: d.RevisitDays,
		Pages: d.PagesPerVisit, InDomains: num(d.InDomains), OutDomains: num(d.OutDomains), Community: d.Community,
		LinkWords: d.LinkWords, HTTPS: yesNo(d.HTTPS), IPv6: yesNo(d.IPv6), OptedOut: d.OptedOut,
		FirstSeen: when(d.FirstSeen), LastVisit: when(d.LastVisit), Failures: d.Failures, PointOnMap: d.Point != nil,
		InLinks: newLinkList(d.InLinks), OutLinks: newLinkList(d.OutLinks)}
	if d.Rank != nil {
		v.Rank, v.Move = num(*d.Rank), moveText(d.Move, d.PrevRank)
	}
	if d.Community != nil {
		v.CommunitySize = num(d.Community.Size)
	}
	if d.NetworkOperator != nil {
		v.Operator = *d.NetworkOperator
	}
	if d.ASN != nil {
		v.ASN = strconv.FormatInt(*d.ASN, 10)
	}
	if d.LastOutcome != nil {
		v.LastOutcome = *d.LastOutcome
	}
	if d.LastStatus != nil {
		v.LastStatus = strconv.Itoa(int(*d.LastStatus))
	}
	if n := d.NextVisit; n != nil {
		v.NextVisit = at(n.At) + ": " + n.Why
	}
	for _, x := range d.Visits {
		vv := visitView{Started: at(x.StartedAt), Outcome: x.Outcome, Pages: strconv.Itoa(int(x.Pages)), Read: num(x.Bytes/1024) + " KB"}
		if x.HTTPStatus != 0 {
			vv.Status = strconv.Itoa(int(x.HTTPStatus))
		}
		if x.Error != nil {
			vv.Error = *x.Error
		}
		v.Visits = append(v.Visits, vv)
	}
	return v
}

func newLinkList(l linksJSON) linkList {
	out := linkList{Total: num(l.Total), Start: l.Offset + 1}
	if l.Nofollow > 0 {
		out.Nofollow = num(l.Nofollow)
	}
	var b strings.Builder
	for _, it := range l.Items {
		name := html.EscapeString(it.Domain)
		if it.Nofollow {
			b.WriteString(`<li class="nofollow">`)
		} else {
			b.WriteString(`<li>`)
		}
		b.WriteString(`<a href="/d/` + html.EscapeString(url.PathEscape(it.Domain)) + `">` + name + `</a>`)
		if it.Rank != nil {
			b.WriteString(` <span class="rk">#` + num(*it.Rank) + `</span>`)
		}
		if it.Nofollow {
			b.WriteString(` <span class="tag">nofollow</span>`)
		}
		if it.Sitewide {
			b.WriteString(` <span class="tag">sitewide</span>`)
		}
		b.WriteString("</li>\n")
	}
	out.Items = template.HTML(b.String()) // every value escaped above
	return out
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
	v := newDomainView(d)
	v.InPage = newPager(base, "in", inPage, d.InLinks.Total, linksPerPage)
	v.OutPage = newPager(base, "out", outPage, d.OutLinks.Total, linksPerPage)
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
