package data

import (
	"testing"
	"time"
)

func TestRetryDelay(t *testing.T) {
	const d = 24 * time.Hour
	tests := []struct {
		outcome    Outcome
		failures   int
		retryAfter time.Duration
		want       time.Duration
	}{
		{OutcomeOK, 1, 0, 0},
		{OutcomePartial, 1, 0, 0},
		{OutcomeThrottled, 1, 0, time.Hour},                 // no sooner than 1 hour
		{OutcomeThrottled, 1, 10 * time.Minute, time.Hour},  // Retry-After shorter than an hour
		{OutcomeThrottled, 1, 3 * time.Hour, 3 * time.Hour}, // Retry-After longer
		{OutcomeThrottled, 2, 3 * time.Hour, 6 * time.Hour}, // the same failure again doubles
		{OutcomeBotProtection, 1, 0, 90 * d},                // firewall: 90 days
		{OutcomeBotProtection, 2, 0, 180 * d},
		{OutcomeBotProtection, 3, 0, 360 * d},
		{OutcomeBotProtection, 4, 0, 365 * d}, // capped
		{OutcomeTimeout, 1, 0, d},
		{OutcomeDNSError, 2, 0, 2 * d},
		{OutcomeConnectError, 3, 0, 4 * d},
		{OutcomeRobotsUnavailable, 1, 0, d},
		{OutcomeTimeout, 9, 0, 256 * d},
		{OutcomeTimeout, 10, 0, 365 * d},
		{OutcomeTimeout, 1000, 0, 365 * d}, // no overflow
		{OutcomeThrottled, 1, 1000 * d, 365 * d},
	}
	for _, tc := range tests {
		if got := RetryDelay(tc.outcome, tc.failures, tc.retryAfter); got != tc.want {
			t.Errorf("RetryDelay(%s, %d, %v) = %v, want %v", tc.outcome, tc.failures, tc.retryAfter, got, tc.want)
		}
	}
}

func TestOutcomesValid(t *testing.T) {
	if len(Outcomes) != 12 {
		t.Fatalf("DESIGN.md lists 12 outcomes, have %d", len(Outcomes))
	}
	for _, o := range Outcomes {
		if !o.Valid() {
			t.Errorf("%s not valid", o)
		}
	}
	if Outcome("fine").Valid() {
		t.Error("unknown outcome valid")
	}
}
