package crawl

import (
	"net/http"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/schedule"
)

// FuzzRetryAfterHTTPDate: a Retry-After HTTP-date in any of the three forms
// RFC 9110 (section 5.6.7) makes a recipient accept waits exactly until
// that instant (capped), and a date in the past means no wait.
func FuzzRetryAfterHTTPDate(f *testing.F) {
	f.Add(int64(3600), uint8(0))
	f.Add(int64(-60), uint8(1))
	f.Add(int64(400*24*3600), uint8(2))
	f.Add(int64(1), uint8(0))
	f.Add(int64(0), uint8(1))
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	forms := []string{
		http.TimeFormat,                  // IMF-fixdate: Sun, 06 Nov 1994 08:49:37 GMT
		"Monday, 02-Jan-06 15:04:05 GMT", // obsolete RFC 850
		time.ANSIC,                       // obsolete asctime: Sun Nov  6 08:49:37 1994
	}
	f.Fuzz(func(t *testing.T, secs int64, form uint8) {
		// RFC 850 has a two-digit year: stay within the century it reads.
		const span = 40 * 365 * 24 * 3600
		secs %= span
		at := now.Add(time.Duration(secs) * time.Second)
		v := at.Format(forms[int(form)%len(forms)])
		want := time.Duration(0)
		if secs > 0 {
			want = min(time.Duration(secs)*time.Second, schedule.MaxBackoff)
		}
		if got := retryAfter(http.Header{"Retry-After": {v}}, now); got != want {
			t.Fatalf("Retry-After %q: %v, want %v", v, got, want)
		}
	})
}
