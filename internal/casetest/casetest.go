// Package casetest runs the project's data-driven test cases: text files
// under a package's testdata/ that a reader can review, each a list of
// commands in github.com/cockroachdb/datadriven's format (Pebble's and
// CockroachDB's test files):
//
//	# a comment
//	command arg key=value key=(v1, v2)
//	the command's input (may hold blank lines)
//	----
//	the output expected (up to a blank line; ----/---- brackets an output
//	that holds blank lines)
//
// After a deliberate change of behaviour, go test -update (or datadriven's
// own -rewrite) writes what the code does now into the expected outputs;
// review the diff before committing it.
//
// Only test files import it: the crawler's robots.txt cases (crawl/robots),
// page-reading cases (crawl/page) and visit cases (crawl) share it.
package casetest

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cockroachdb/datadriven"
)

// TestData is one command of a case file.
type TestData = datadriven.TestData

// Runner runs one command and returns its output.
type Runner func(t *testing.T, d *TestData) string

var update = flag.Bool("update", false, "rewrite the expected outputs of the data-driven cases under testdata/ (datadriven's -rewrite)")

// Run runs every case file matching glob (e.g. "testdata/visits/*.txt"),
// each as a subtest named for the file without its extension. newFile is
// called once per file, in the file's subtest, and returns the Runner of
// its commands: state it sets up (a web to visit) lasts for the file. A
// glob that matches nothing fails the test: cases silently not run would
// pass.
func Run(t *testing.T, glob string, newFile func(t *testing.T) Runner) {
	t.Helper()
	if *update {
		if err := flag.Set("rewrite", "true"); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(glob)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no case file matches %s", glob)
	}
	slices.Sort(files)
	for _, file := range files {
		name := filepath.Base(file)
		name = name[:len(name)-len(filepath.Ext(name))]
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(file); err != nil {
				t.Fatal(err)
			}
			run := newFile(t)
			datadriven.RunTest(t, file, func(t *testing.T, d *TestData) string {
				return run(t, d)
			})
		})
	}
}

// Text is a command's input as the bytes of a file: datadriven trims the
// input's surrounding white space, so a non-empty input gets back the line
// end its last line had in the case file.
func Text(d *TestData) string {
	if d.Input == "" {
		return ""
	}
	return d.Input + "\n"
}

// Each calls fn with every command of the case files matching glob,
// without running or checking them: to seed a fuzz target with the cases'
// inputs, say.
func Each(tb testing.TB, glob string, fn func(d *TestData)) {
	tb.Helper()
	files, err := filepath.Glob(glob)
	if err != nil {
		tb.Fatal(err)
	}
	slices.Sort(files)
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			tb.Fatal(err)
		}
		// Run over the file's text, not the file: nothing is rewritten.
		// Each command "passes" by returning what it expects.
		datadriven.RunTestFromStringAny(tb, string(b), func(_ testing.TB, d *TestData) string {
			fn(d)
			return d.Expected
		})
	}
}
