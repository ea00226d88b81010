package main

import (
	"bytes"
	"context"
	"testing"
)

// runIn runs a command line in-process as main does, with --data-dir dir
// first (a later --data-dir in args wins), and returns the exit code and
// what it wrote to stdout and stderr. The output goes to buffers handed to
// run, not through os.Stdout: the one helper every command's tests use
// (its name kept from rank_test.go, where it was one of three copies).
// Each command line gets its own app (run), so the tests of this package
// run in parallel (t.Parallel) unless they change what the whole process
// shares, such as its environment.
func runIn(t *testing.T, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return runWith(t, nil, dir, args...)
}

// runWith is runIn with opt (if not nil) given to run: a seam of this
// command line replaced, and no other's.
func runWith(t *testing.T, opt appOption, dir string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var opts []appOption
	if opt != nil {
		opts = append(opts, opt)
	}
	var out, errOut bytes.Buffer
	code = run(context.Background(), append([]string{"--data-dir", dir}, args...), &out, &errOut, opts...)
	return code, out.String(), errOut.String()
}
