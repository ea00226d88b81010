package schedule

import (
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

func TestBackoff(t *testing.T) {
	const d = 24 * time.Hour
	tests := []struct {
		outcome    data.Outcome
		failures   int
		retryAfter time.Duration
		want       time.Duration
	}{
		{data.OutcomeOK, 1, 0, 0},
		{data.OutcomePartial, 1, 0, 0},
		{data.OutcomeThrottled, 1, 0, time.Hour},                 // no sooner than 1 hour
		{data.OutcomeThrottled, 1, 10 * time.Minute, time.Hour},  // Retry-After shorter than an hour
		{data.OutcomeThrottled, 1, 3 * time.Hour, 3 * time.Hour}, // Retry-After longer
		{data.OutcomeThrottled, 2, 3 * time.Hour, 6 * time.Hour}, // the same failure again doubles
		{data.OutcomeBotProtection, 1, 0, 90 * d},                // firewall: 90 days
		{data.OutcomeBotProtection, 2, 0, 180 * d},
		{data.OutcomeBotProtection, 3, 0, 360 * d},
		{data.OutcomeBotProtection, 4, 0, 365 * d}, // capped
		{data.OutcomeTimeout, 1, 0, d},
		{data.OutcomeDNSError, 2, 0, 2 * d},
		{data.OutcomeConnectError, 3, 0, 4 * d},
		{data.OutcomeRobotsUnavailable, 1, 0, d},
		{data.OutcomeTimeout, 9, 0, 256 * d},
		{data.OutcomeTimeout, 10, 0, 365 * d},
		{data.OutcomeTimeout, 1000, 0, 365 * d}, // no overflow
		{data.OutcomeThrottled, 1, 1000 * d, 365 * d},
	}
	for _, tc := range tests {
		if got := Backoff(tc.outcome, tc.failures, tc.retryAfter); got != tc.want {
			t.Errorf("Backoff(%s, %d, %v) = %v, want %v", tc.outcome, tc.failures, tc.retryAfter, got, tc.want)
		}
	}
}
