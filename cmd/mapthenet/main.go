// Command mapthenet crawls the web politely, keeps the domain-to-domain link
// graph, and rebuilds ranked Parquet snapshots of it. Each subcommand lives in
// its own file and only parses flags before calling the package that does
// the work.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes cron jobs can rely on (README, "Running from cron").
const (
	exitOK      = 0
	exitFailure = 1 // the work failed: see the log
	exitUsage   = 2 // bad flags or arguments
	exitBusy    = 3 // another process holds what this one needs
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	stopProfile := startCPUProfile(os.Stderr)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stopProfile()
	stop()
	os.Exit(code)
}

// run runs one command line, its output to stdout and its log and errors
// to stderr (tests pass buffers, and options replacing a seam), and returns
// the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, opts ...appOption) int {
	a := newApp()
	for _, o := range opts {
		o(a)
	}
	root := newRootCommand(a)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := findCommand(root, args)
	if err == nil {
		err = root.ExecuteContext(ctx)
	}
	if err == nil {
		return exitOK
	}
	code := exitCode(err)
	a.reportError(stderr, err, code)
	return code
}

// exitCode maps the error that ended a command to the exit code scripts see.
func exitCode(err error) int {
	var ue usageError
	var be busyError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case errors.As(err, &be):
		return exitBusy
	}
	return exitFailure
}

// reportError writes the error that ends the run: under --log-format json
// as one more JSON line (level ERROR, with the exit code), so that a log
// shipper sees every line of a failed run parse; else as one plain line.
func (a *app) reportError(stderr io.Writer, err error, code int) {
	if a.logger != nil && a.LogFormat == "json" {
		a.logger.Error("mapthenet: "+err.Error(), "exit", code)
		return
	}
	fmt.Fprintln(stderr, "mapthenet:", err)
}

// usageError marks an error in the command line (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

// busyError marks "another process holds the lock" (exit 3).
type busyError struct{ err error }

func (e busyError) Error() string { return e.err.Error() }
func (e busyError) Unwrap() error { return e.err }
