package mapview

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if any goroutine outlives them (the
// browser tests' chromedp ones included).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
