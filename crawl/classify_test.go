package crawl

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/schedule"
)

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"120", "Wed, 21 Oct 2026 07:28:00 GMT", "-1", "99999999999999999999", "soon", ""} {
		f.Add(s)
	}
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, v string) {
		d := retryAfter(http.Header{"Retry-After": {v}}, now)
		if d < 0 || d > 365*24*time.Hour {
			t.Fatalf("retryAfter(%q) = %v", v, d)
		}
		// delay-seconds (1*DIGIT): exactly that many seconds, however
		// many digits, up to the cap; a longer wait never reads shorter.
		if digits := strings.TrimSpace(v); digits != "" && strings.Trim(digits, "0123456789") == "" {
			want := schedule.MaxBackoff
			if n, err := strconv.ParseInt(digits, 10, 64); err == nil && n < int64(schedule.MaxBackoff/time.Second) {
				want = time.Duration(n) * time.Second
			}
			if d != want {
				t.Fatalf("retryAfter(%q) = %v, want %v", v, d, want)
			}
		}
	})
}

func FuzzBotProtection(f *testing.F) {
	f.Add(403, "<title>Just a moment...</title>")
	f.Add(200, "<html>an article about Cloudflare</html>")
	f.Fuzz(func(t *testing.T, status int, body string) {
		botProtection(status, http.Header{}, []byte(body))
	})
}

func TestBotProtectionNotOnOrdinaryPages(t *testing.T) {
	for _, body := range []string{
		"<html><title>Blog</title>We use imperva for security</html>",
		"<html><title>Access denied stories</title></html>",
	} {
		if svc := botProtection(200, http.Header{}, []byte(body)); svc != "" {
			t.Errorf("%q: %s", body, svc)
		}
	}
}
