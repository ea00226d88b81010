package data

import "time"

// Outcome is how a visit went (DESIGN.md, "Outcomes"). It is stored as a
// string in visits.parquet and domains.parquet.
type Outcome string

const (
	OutcomeOK                Outcome = "ok"
	OutcomePartial           Outcome = "partial"
	OutcomeMoved             Outcome = "moved"
	OutcomeOptedOut          Outcome = "opted_out"
	OutcomeRobotsUnavailable Outcome = "robots_unavailable"
	OutcomeThrottled         Outcome = "throttled"
	OutcomeBotProtection     Outcome = "bot_protection"
	OutcomeTimeout           Outcome = "timeout"
	OutcomeDNSError          Outcome = "dns_error"
	OutcomeConnectError      Outcome = "connect_error"
	OutcomeHTTPError         Outcome = "http_error"
	OutcomeGone              Outcome = "gone"
)

// Outcomes lists every outcome word, in DESIGN.md's order.
var Outcomes = []Outcome{
	OutcomeOK, OutcomePartial, OutcomeMoved, OutcomeOptedOut, OutcomeRobotsUnavailable,
	OutcomeThrottled, OutcomeBotProtection, OutcomeTimeout, OutcomeDNSError,
	OutcomeConnectError, OutcomeHTTPError, OutcomeGone,
}

// Valid reports whether o is one of DESIGN.md's outcome words.
func (o Outcome) Valid() bool {
	for _, x := range Outcomes {
		if o == x {
			return true
		}
	}
	return false
}

// IsFailure reports whether the outcome means the site could not be read
// this time and must be retried on a backoff rather than revisited by tier.
func (o Outcome) IsFailure() bool {
	switch o {
	case OutcomeRobotsUnavailable, OutcomeThrottled, OutcomeBotProtection,
		OutcomeTimeout, OutcomeDNSError, OutcomeConnectError:
		return true
	}
	return false
}

const (
	day = 24 * time.Hour
	// MaxBackoff caps every retry wait (DESIGN.md: "up to 365 days").
	MaxBackoff = 365 * day
)

// RetryDelay is how long to wait before the next visit after a failed one
// (DESIGN.md, "Responses"). failures counts consecutive visits that ended in
// this same outcome, this one included (1 for a first failure): the wait
// doubles each time, up to MaxBackoff. retryAfter is the server's Retry-After
// (0 when absent); it only matters for throttling. It returns 0 for outcomes
// that are not failures.
func RetryDelay(o Outcome, failures int, retryAfter time.Duration) time.Duration {
	var base time.Duration
	switch o {
	case OutcomeThrottled:
		base = max(retryAfter, time.Hour)
	case OutcomeBotProtection:
		base = 90 * day
	case OutcomeTimeout, OutcomeDNSError, OutcomeConnectError, OutcomeRobotsUnavailable:
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
