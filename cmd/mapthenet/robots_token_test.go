package main

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

// A --robots-token outside RFC 9309's product token characters (letters,
// "-", "_") is refused with a usage error, not cut to its leading letters.
func TestCrawlRobotsTokenFlag(t *testing.T) {
	t.Parallel()
	good := crawlFlags{AgentURL: webbotauth.DefaultAgentURL, AgentForm: "dictionary", MinDelay: 1}
	for _, tc := range []struct {
		token string
		ok    bool
	}{
		{"MapTheNetBot", true},
		{"My-Bot_x", true},
		{"", true}, // the default
		{"Bot2", false},
		{"MapTheNetBot/1.0", false},
		{"Map TheNetBot", false},
		{"*", false},
		{"bücherbot", false},
		{"-", true},
	} {
		fl := good
		fl.RobotsToken = tc.token
		o, err := newApp().crawlOptions(fl, io.Discard)
		var ue usageError
		switch {
		case tc.ok && err != nil:
			t.Errorf("--robots-token %q: %v", tc.token, err)
		case tc.ok && o.RobotsToken != tc.token:
			t.Errorf("--robots-token %q: options say %q", tc.token, o.RobotsToken)
		case !tc.ok && !errors.As(err, &ue):
			t.Errorf("--robots-token %q: err = %v, want a usage error", tc.token, err)
		case !tc.ok && !strings.Contains(err.Error(), "--robots-token") || !tc.ok && strings.Contains(err.Error(), "\n"):
			t.Errorf("--robots-token %q: %q, want one line naming the flag", tc.token, err)
		}
	}
}

// Through the command line: exit 2 and one line on stderr, before any work
// (every host is mapped with --connect-to, so no identity is needed).
func TestCrawlRobotsTokenExit(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runIn(t, t.TempDir(), "crawl", "--robots-token", "Bot2", "--until-idle", "--connect-to", "::127.0.0.1:9")
	if code != exitUsage {
		t.Fatalf("exit %d, want %d (stderr %q)", code, exitUsage, stderr)
	}
	if stdout != "" {
		t.Errorf("stdout %q", stdout)
	}
	if got := strings.TrimSuffix(stderr, "\n"); strings.Contains(got, "\n") || !strings.Contains(got, `--robots-token "Bot2": want a product token`) {
		t.Errorf("stderr %q, want one line about --robots-token", stderr)
	}
}
