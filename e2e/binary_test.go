package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The mapthenet binary the tests run, built once for the whole package
// (without the race detector: it is the thing under test, not the test).
var binary struct {
	once sync.Once
	dir  string
	path string
	err  error
	out  []byte
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binary.dir != "" {
		os.RemoveAll(binary.dir)
	}
	os.Exit(code)
}

// buildBinary returns the path of the built cmd/mapthenet, building it on
// first use.
func buildBinary(tb testing.TB) string {
	tb.Helper()
	if bin := os.Getenv(envBin); bin != "" {
		return bin // a child test process (mount_test.go): built by its parent
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		tb.Skipf("no go tool on PATH to build the binary: %v", err)
	}
	binary.once.Do(func() {
		if binary.dir, binary.err = os.MkdirTemp("", "mapthenet-e2e-"); binary.err != nil {
			return
		}
		binary.path = filepath.Join(binary.dir, "mapthenet")
		binary.out, binary.err = exec.Command(goTool, "build", "-o", binary.path,
			"github.com/mapthenet/mapthenet/cmd/mapthenet").CombinedOutput()
	})
	if binary.err != nil {
		tb.Fatalf("go build: %v\n%s", binary.err, binary.out)
	}
	return binary.path
}
