package crawl

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/schedule"
)

// classifyResponse is the last layer of the fetch path: it says whether a
// response stops the visit or is an error page, before any link is read.
// nil: read it.
func classifyResponse(r *response, now time.Time) *stop {
	if svc := botProtection(r.Status, r.Header, r.Body); svc != "" {
		return &stop{outcome: data.OutcomeBotProtection, reason: "bot protection: " + svc}
	}
	switch {
	case r.Status == http.StatusTooManyRequests || r.Status == http.StatusServiceUnavailable:
		return &stop{outcome: data.OutcomeThrottled, reason: fmt.Sprintf("status %d", r.Status), retryAfter: retryAfter(r.Header, now)}
	case r.Status == http.StatusNotFound || r.Status == http.StatusGone:
		return &stop{outcome: data.OutcomeGone, reason: fmt.Sprintf("status %d", r.Status)}
	case r.Status >= 400:
		return &stop{outcome: data.OutcomeHTTPError, reason: fmt.Sprintf("status %d", r.Status)}
	}
	return nil
}

// retryAfter reads Retry-After: delay-seconds or an HTTP-date (RFC 9110
// section 10.2.3); 0 when absent or unreadable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		if n > int64(schedule.MaxBackoff/time.Second) {
			return schedule.MaxBackoff
		}
		return time.Duration(n) * time.Second
	} else if errors.Is(err, strconv.ErrRange) && n > 0 {
		// More seconds than an int64 holds: the longest wait, not none
		// (a fuzz finding).
		return schedule.MaxBackoff
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return min(t.Sub(now), schedule.MaxBackoff)
	}
	return 0
}

// botProtection names the service whose challenge or block page this is,
// "" when none. Markers are the services' own: a header, or the fixed text
// of their interstitials, looked for only in an error status's body or in
// error status's body (a real article that mentions "Just a moment..." is
// not a challenge).
func botProtection(status int, h http.Header, body []byte) string {
	if strings.EqualFold(h.Get("Cf-Mitigated"), "challenge") {
		return "cloudflare"
	}
	if status < 400 {
		return "" // a page that was served: its body is read as a page, not searched for markers
	}
	head := body
	if len(head) > 64*1024 {
		head = head[:64*1024]
	}
	lower := bytes.ToLower(head)
	has := func(s string) bool { return bytes.Contains(lower, []byte(s)) }
	server := strings.ToLower(h.Get("Server"))
	switch {
	case has("<title>just a moment...</title>"), has("cf-browser-verification"), has("/cdn-cgi/challenge-platform/"),
		has("attention required! | cloudflare"), has("cf_chl_opt"):
		return "cloudflare"
	case h.Get("X-Datadome") != "" || h.Get("X-Dd-B") != "" || has("captcha-delivery.com"):
		if status >= 400 || has("captcha-delivery.com") {
			return "datadome"
		}
	case has("incapsula incident id"), has("_incapsula_resource"), has("imperva"):
		if status >= 400 || has("_incapsula_resource") {
			return "imperva"
		}
	case has("sucuri website firewall"), h.Get("X-Sucuri-Block") != "":
		return "sucuri"
	case status == http.StatusForbidden && strings.Contains(server, "akamaighost") && has("access denied"):
		return "akamai"
	case status == http.StatusForbidden && has("you don't have permission to access") && has("reference #"):
		return "akamai"
	}
	return ""
}
