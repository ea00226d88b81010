package schedule

import (
	"time"

	"github.com/mapthenet/mapthenet/data"
)

const (
	day = 24 * time.Hour
	// MaxBackoff caps every retry wait, a server's Retry-After included
	// (DESIGN.md: "up to 365 days").
	MaxBackoff = 365 * day
)

// Backoff is how long to wait before the next visit after a failed one
// (DESIGN.md, "Responses"): max(Retry-After, 1 hour) after a 429 or 503,
// 90 days after a firewall or bot-protection block, a day after a timeout,
// a DNS or connection failure or an unavailable robots.txt. failures counts
// consecutive visits that ended in this same outcome, this one included (1
// for a first failure): the wait doubles each time, up to MaxBackoff.
// retryAfter is the server's Retry-After (0 when absent); it only matters
// for throttling. It returns 0 for outcomes that are not failures.
func Backoff(o data.Outcome, failures int, retryAfter time.Duration) time.Duration {
	var base time.Duration
	switch o {
	case data.OutcomeThrottled:
		base = max(retryAfter, time.Hour)
	case data.OutcomeBotProtection:
		base = 90 * day
	case data.OutcomeTimeout, data.OutcomeDNSError, data.OutcomeConnectError, data.OutcomeRobotsUnavailable:
		base = day
	default:
		return 0
	}
	if base > MaxBackoff {
		return MaxBackoff
	}
	d := base
	for i := 1; i < failures; i++ {
		d *= 2
		if d >= MaxBackoff {
			return MaxBackoff
		}
	}
	return d
}

// RetryAt is when a domain whose last visit failed may be visited again:
// its last visit plus the Backoff of what the store recorded of it (the
// outcome, the failures in a row, the server's Retry-After). A store of
// format 2 recorded this time itself rather than the Retry-After
// (graph/FORMAT.md): such a recorded time stands until the domain's next
// visit. The zero time when the last visit was not a failure.
func RetryAt(st *data.DomainState) time.Time {
	if !st.Visited() || !st.LastOutcome.IsFailure() {
		return time.Time{}
	}
	if !st.RetryAt.IsZero() {
		return st.RetryAt
	}
	return st.LastVisit.Add(Backoff(st.LastOutcome, max(st.Failures, 1), st.RetryAfter))
}
