package data

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
