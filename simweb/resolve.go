package simweb

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// answerKind says how the handler must treat a resolved request beyond
// writing the page.
type answerKind int

const (
	answerPage     answerKind = iota
	answerRefuse              // close the connection unanswered
	answerThrottle            // 429 with an HTTP-date Retry-After
)

var (
	throttlePage = &page{status: 429, ctype: "text/html; charset=utf-8", kind: pageRaw, raw: []byte(throttleBody)}
	notFoundPage = &page{status: 404, ctype: "text/html; charset=utf-8", kind: pageRaw, raw: []byte(notFoundBody)}
)

// resolve finds the answer of h for a request of pathQuery (as sent, not
// normalised) other than robots.txt. The handler and ExpectedEdges both use
// it, so what is served is what is expected.
func (h *host) resolve(pathQuery string) (*page, answerKind) {
	if h.refuse {
		return nil, answerRefuse
	}
	if h.redirectAll != "" {
		return redirectPage(301, h.redirectAll+pathQuery), answerPage
	}
	if h.challenge != challengeNone {
		return h.challengePage(), answerPage
	}
	key := normalizePath(pathQuery)
	if h.throttleAfterHome && key != "/" {
		return throttlePage, answerThrottle
	}
	if p := h.pages[key]; p != nil {
		return p, answerPage
	}
	if h.calendar {
		if p := h.calendarPage(key); p != nil {
			return p, answerPage
		}
	}
	return notFoundPage, answerPage
}

func (h *host) challengePage() *page {
	if h.challenge == challengeCF {
		return &page{status: 403, ctype: "text/html; charset=UTF-8", kind: pageRaw,
			header: http.Header{
				"Cf-Mitigated":  {"challenge"},
				"Server":        {"cloudflare"},
				"Cf-Ray":        {"8f3a1b2c3d4e5f60-AMS"},
				"Cache-Control": {"private, max-age=0, no-store, no-cache, must-revalidate"},
			},
			raw: fmt.Appendf(nil, cfChallengeBody, h.name, h.name)}
	}
	return &page{status: 403, ctype: "text/html; charset=UTF-8", kind: pageRaw,
		raw: fmt.Appendf(nil, genericChallengeBody, h.name)}
}

// calendarPage makes /calendar/YYYY/MM: a month that links the next one,
// forever (DESIGN.md's page budget is what stops a crawler).
func (h *host) calendarPage(key string) *page {
	rest, ok := strings.CutPrefix(key, "/calendar/")
	if !ok {
		return nil
	}
	ys, ms, ok := strings.Cut(rest, "/")
	y, err1 := strconv.Atoi(ys)
	m, err2 := strconv.Atoi(ms)
	if !ok || err1 != nil || err2 != nil || y < 1 || y > 99999 || m < 1 || m > 12 || key != fmt.Sprintf("/calendar/%d/%02d", y, m) {
		return nil
	}
	ny, nm := y, m+1
	if nm > 12 {
		ny, nm = y+1, 1
	}
	next := fmt.Sprintf("/calendar/%d/%02d", ny, nm)
	return htmlPage(fmt.Sprintf("Calendar %d-%02d", y, m), h.nav, section{filler: 200, links: []link{
		{href: next, text: "next month", host: h.name, path: next, site: h.site},
	}})
}
