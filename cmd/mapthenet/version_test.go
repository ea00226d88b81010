package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestVersion(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := runIn(t, dir, "version")
	if code != 0 || !strings.HasPrefix(out, "mapthenet ") || !strings.Contains(out, "go1.") {
		t.Errorf("version: exit %d, %q %q", code, out, errOut)
	}
	code, flagOut, _ := runIn(t, dir, "--version")
	if code != 0 || flagOut != out {
		t.Errorf("--version: exit %d, %q; version printed %q", code, flagOut, out)
	}
	code, js, _ := runIn(t, dir, "version", "--json")
	var v struct {
		Version   string `json:"version"`
		GoVersion string `json:"go_version"`
	}
	if err := json.Unmarshal([]byte(js), &v); code != 0 || err != nil || v.Version == "" || v.GoVersion == "" {
		t.Errorf("version --json: exit %d, %v, %q", code, err, js)
	}
}

// Under --log-format json every line of a failed run parses, the fatal
// error included (as the last line, level ERROR, with the exit code).
func TestJSONLogsOfAFailedRun(t *testing.T) {
	t.Parallel()
	code, _, errOut := runIn(t, t.TempDir(), "--log-format", "json", "rank", "--top", "3")
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Errorf("not JSON: %q", l)
		}
	}
	var last map[string]any
	json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if last["level"] != "ERROR" || last["exit"] != float64(1) || !strings.Contains(last["msg"].(string), "no snapshot") {
		t.Errorf("last line %v", last)
	}
}

func TestLogLevel(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errOut := runIn(t, dir, "--log-level", "loud", "version"); code != 2 || !strings.Contains(errOut, "--log-level") {
		t.Errorf("--log-level loud: exit %d, %q", code, errOut)
	}
	for _, l := range []string{"debug", "info", "warn", "error", "WARN"} {
		if code, _, errOut := runIn(t, dir, "--log-level", l, "version"); code != 0 {
			t.Errorf("--log-level %s: exit %d, %q", l, code, errOut)
		}
	}
}

// Exit code 2 comes from the error's type: unknown commands, flags and
// arguments of every kind, whatever cobra's message says.
func TestUsageExitCodes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, args := range [][]string{
		{"foo"}, {"rank", "--bogus"}, {"version", "extra"}, {"keys", "nope"},
		{"schedule", "x"}, {"robots", "check"}, {"crawl", "--min-delay", "soon"},
	} {
		if code, _, errOut := runIn(t, dir, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d: %s", args, code, exitUsage, errOut)
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"rank", "--help"}} {
		if code, _, errOut := runIn(t, dir, args...); code != exitOK {
			t.Errorf("%q: exit %d, want 0: %s", args, code, errOut)
		}
	}
}
