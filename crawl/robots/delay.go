package robots

import (
	"strconv"
	"time"
)

// MaxCrawlDelay caps Crawl-delay: a site asking for more than a day between
// requests gets a day. A visit of a few pages then still ends within days,
// and a typo of extra digits cannot park the crawler on one site for years.
const MaxCrawlDelay = 24 * time.Hour

// parseDelay reads a Crawl-delay value: seconds, a whole or decimal number
// ("10", "0.5", ".5", "2."). Anything else (negative, units, exponents,
// "inf", hex) is ignored, as Crawl-delay is no standard and guessing could
// go either way.
func parseDelay(value string) (time.Duration, bool) {
	digits, dots := 0, 0
	for i := 0; i < len(value); i++ {
		switch c := value[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return 0, false
		}
	}
	if digits == 0 || dots > 1 {
		return 0, false
	}
	s, err := strconv.ParseFloat(value, 64)
	if err != nil { // only a value too long to hold; treat as huge
		return MaxCrawlDelay, true
	}
	if s >= MaxCrawlDelay.Seconds() {
		return MaxCrawlDelay, true
	}
	return time.Duration(s * float64(time.Second)), true
}
