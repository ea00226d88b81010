package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -update-robots rewrites the golden files of these tests (a name of its
// own, so as not to clash with other commands' tests in this package).
var updateRobots = flag.Bool("update-robots", false, "rewrite the robots check golden files")

const robotsCheckDir = "../../crawl/robots/testdata/check"

func checkRobotsGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(robotsCheckDir, name)
	if *updateRobots {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -run TestRobotsCheck -update-robots writes it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -run TestRobotsCheck -update-robots rewrites it)\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

var robotsCheckURLs = []string{
	"https://example.com/",
	"https://example.com/private/page",
	"https://example.com/private/open/page?x=1&y=2",
	"https://example.com/doc.pdf",
	"https://example.com/doc.pdf?download=1",
	"http://example.com:8080/robots.txt",
	"/private/",
	"/caf%C3%A9",
}

func TestRobotsCheckText(t *testing.T) {
	t.Parallel()
	args := append([]string{"robots", "check", "--file", filepath.Join(robotsCheckDir, "robots.txt"), "--agent", "MapTheNetBot"}, robotsCheckURLs...)
	code, stdout, stderr := runIn(t, t.TempDir(), args...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	checkRobotsGolden(t, "check.golden.txt", stdout)
}

func TestRobotsCheckJSON(t *testing.T) {
	t.Parallel()
	args := append([]string{"robots", "check", "--file", filepath.Join(robotsCheckDir, "robots.txt"), "--agent", "MapTheNetBot", "--json"}, robotsCheckURLs...)
	code, stdout, stderr := runIn(t, t.TempDir(), args...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	checkRobotsGolden(t, "check.golden.json", stdout)

	// Exactly one object, of the documented shape.
	dec := json.NewDecoder(strings.NewReader(stdout))
	var got struct {
		Agent       string   `json:"agent"`
		CrawlDelayS *float64 `json:"crawl_delay_s"`
		Results     []struct {
			URL     string `json:"url"`
			Allowed *bool  `json:"allowed"`
		} `json:"results"`
	}
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Error("more than one JSON value")
	}
	if got.Agent != "MapTheNetBot" || got.CrawlDelayS == nil || *got.CrawlDelayS != 2.5 || len(got.Results) != len(robotsCheckURLs) {
		t.Errorf("unexpected output %+v", got)
	}
	for i, r := range got.Results {
		if r.URL != robotsCheckURLs[i] || r.Allowed == nil {
			t.Errorf("result %d = %+v", i, r)
		}
	}
}

func TestRobotsCheckNoCrawlDelay(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "robots.txt")
	if err := os.WriteFile(file, []byte("User-agent: *\nDisallow: /\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runIn(t, t.TempDir(), "robots", "check", "--file", file, "--agent", "OtherBot", "--json", "https://example.com/")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	want := `{
  "agent": "OtherBot",
  "crawl_delay_s": null,
  "results": [
    {
      "url": "https://example.com/",
      "allowed": false
    }
  ]
}
`
	if stdout != want {
		t.Errorf("got\n%s\nwant\n%s", stdout, want)
	}
	code, stdout, _ = runIn(t, t.TempDir(), "robots", "check", "--file", file, "--agent", "OtherBot", "/robots.txt", "/x")
	if want := "allowed    /robots.txt\ndisallowed /x\ncrawl-delay none\n"; code != exitOK || stdout != want {
		t.Errorf("exit %d, got\n%s\nwant\n%s", code, stdout, want)
	}
}

func TestRobotsCheckTruncatedNote(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "robots.txt")
	body := "User-agent: *\n" + strings.Repeat("# padding\n", 51_200) + "Disallow: /\n"
	if err := os.WriteFile(file, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runIn(t, t.TempDir(), "robots", "check", "--file", file, "--agent", "MapTheNetBot", "/")
	if code != exitOK || stdout != "allowed    /\ncrawl-delay none\n" {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, "only its first 512000 bytes were read") {
		t.Errorf("stderr %q: want a note that the file was cut", stderr)
	}
}

func TestRobotsCheckUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(robotsCheckDir, "robots.txt")
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no file", []string{"--agent", "MapTheNetBot", "/"}, "--file is required"},
		{"no agent", []string{"--file", file, "/"}, "--agent is required"},
		{"blank agent", []string{"--file", file, "--agent", " ", "/"}, "--agent is required"},
		{"bad agent", []string{"--file", file, "--agent", "123bot", "/"}, "want a product token"},
		// Refused, not cut to "Bot" or "MapTheNetBot" (RFC 9309 section 2.2.1).
		{"digit in agent", []string{"--file", file, "--agent", "Bot2", "/"}, `--agent "Bot2": want a product token`},
		{"agent with version", []string{"--file", file, "--agent", "MapTheNetBot/1.0", "/"}, "want a product token"},
		{"agent with space", []string{"--file", file, "--agent", "Map TheNetBot", "/"}, "want a product token"},
		{"no URLs", []string{"--file", file, "--agent", "MapTheNetBot"}, "at least one URL"},
		{"missing file", []string{"--file", filepath.Join(dir, "none.txt"), "--agent", "MapTheNetBot", "/"}, "no such file"},
		{"directory", []string{"--file", dir, "--agent", "MapTheNetBot", "/"}, "is a directory"},
		{"ftp URL", []string{"--file", file, "--agent", "MapTheNetBot", "ftp://example.com/"}, "want an http or https URL"},
		{"relative", []string{"--file", file, "--agent", "MapTheNetBot", "page.html"}, "want an http or https URL"},
		{"no host", []string{"--file", file, "--agent", "MapTheNetBot", "https:///x"}, "want an http or https URL"},
		{"bad escape", []string{"--file", file, "--agent", "MapTheNetBot", "https://example.com/%zz"}, "is not a URL"},
		{"unknown flag", []string{"--file", file, "--agent", "MapTheNetBot", "--jsn", "/"}, "unknown flag"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runIn(t, t.TempDir(), append([]string{"robots", "check"}, tt.args...)...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d (stderr %q)", code, exitUsage, stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr %q, want it to say %q", stderr, tt.want)
			}
		})
	}
}

func TestRobotsUnknownSubcommand(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runIn(t, t.TempDir(), "robots", "chek", "/")
	if code != exitUsage || stdout != "" || !strings.Contains(stderr, `unknown command "chek"`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	if code, stdout, _ := runIn(t, t.TempDir(), "robots"); code != exitOK || !strings.Contains(stdout, "check") {
		t.Errorf("robots alone: exit %d, stdout %q; want its help", code, stdout)
	}
}

func TestRobotsCheckHelp(t *testing.T) {
	t.Parallel()
	code, stdout, _ := runIn(t, t.TempDir(), "robots", "check", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--file", "--agent", "--json", "mapthenet robots check --file robots.txt --agent MapTheNetBot"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, stdout)
		}
	}
}
