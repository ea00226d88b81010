package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/spf13/cobra"
)

const (
	testToken   = "ExampleBot"
	testBotPage = "https://crawler.example.org/bot"
	testFrom    = "crawler@example.org"
	testUA      = "ExampleBot/1.0 (+https://crawler.example.org/bot)"
	testAgent   = "https://crawler.example.org/.well-known/http-message-signatures-directory"
)

var initArgs = []string{"init", "--robots-token", testToken, "--bot-page", testBotPage, "--from", testFrom,
	"--now", "2026-12-03T00:00:00Z"}

// oneLine fails unless stderr is one line of error: a reader sees at once
// what is wrong.
func oneLine(t *testing.T, stderr string) {
	t.Helper()
	if strings.Count(strings.TrimRight(stderr, "\n"), "\n") != 0 || !strings.HasPrefix(stderr, "mapthenet: ") {
		t.Errorf("want a one-line error, got:\n%s", stderr)
	}
}

// A crawl that could reach the real web refuses without the operator's
// identity, before it opens the store or makes a key, and says how to
// set it; each missing part is named.
func TestCrawlWithoutIdentityRefuses(t *testing.T) {
	t.Parallel()
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte("a.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		missing string
	}{
		{"nothing", nil, "--robots-token, --user-agent, --from, --signature-agent"},
		{"no From", []string{"--robots-token", testToken, "--user-agent", testUA, "--signature-agent", testAgent}, "give --from ("},
		{"only a user agent", []string{"--user-agent", testUA}, "give --robots-token, --from, --signature-agent ("},
		// A rule for one host, or for one port, or keeping the host,
		// leaves other connections on the real web.
		{"one host mapped", []string{"--connect-to", "a.example::127.0.0.1:1"}, "--robots-token, --user-agent"},
		{"one port mapped", []string{"--connect-to", ":443:127.0.0.1:1"}, "--robots-token, --user-agent"},
		{"host kept", []string{"--connect-to", "::" + ":1"}, "--robots-token, --user-agent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			code, _, stderr := runIn(t, dir, append([]string{"crawl", "--until-idle", "--seeds", seeds}, tt.args...)...)
			if code != exitUsage {
				t.Fatalf("exit %d, want %d: %s", code, exitUsage, stderr)
			}
			oneLine(t, stderr)
			for _, want := range []string{"say who runs this crawl", "run mapthenet init", filepath.Join(dir, "config.toml"), tt.missing} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			for _, made := range []string{"store", "keys"} {
				if _, err := os.Stat(filepath.Join(dir, made)); err == nil {
					t.Errorf("the refused crawl made %s/", made)
				}
			}
		})
	}
}

// An identity a site owner could not use is a usage error, on one line,
// mapped crawl or not.
func TestCrawlIdentityBadInput(t *testing.T) {
	t.Parallel()
	good := map[string]string{"robots-token": testToken, "user-agent": testUA, "from": testFrom, "signature-agent": testAgent}
	tests := []struct {
		key, value, want string
	}{
		{"user-agent", "ExampleBot/1.0", "names no bot page"},
		{"user-agent", "ExampleBot/1.0 (+mailto:crawler@example.org)", "names no bot page"},
		{"user-agent", "OtherBot/1.0 (+https://crawler.example.org/bot)", `does not contain the robots token "ExampleBot"`},
		{"from", "crawler", "want an e-mail address"},
		{"from", "Crawler <crawler@example.org>", "want an e-mail address"},
		{"from", "https://crawler.example.org/", "want an e-mail address"},
		{"signature-agent", "http://crawler.example.org/dir", "want an https URL"},
	}
	for _, tt := range tests {
		for _, mapped := range []bool{false, true} {
			args := []string{"crawl", "--until-idle"}
			if mapped {
				args = append(args, "--connect-to", "::127.0.0.1:1")
			}
			for k, v := range good {
				if k == tt.key {
					v = tt.value
				}
				args = append(args, "--"+k, v)
			}
			code, _, stderr := runIn(t, t.TempDir(), args...)
			if code != exitUsage || !strings.Contains(stderr, "--"+tt.key) || !strings.Contains(stderr, tt.want) {
				t.Errorf("--%s %q (mapped %v): exit %d, want %d and %q: %s", tt.key, tt.value, mapped, code, exitUsage, tt.want, stderr)
			}
			oneLine(t, stderr)
		}
	}
}

// headerLog is a site that records the identity headers of each request.
type headerLog struct {
	mu   sync.Mutex
	reqs []http.Header
}

func (h *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.reqs = append(h.reqs, r.Header.Clone())
	h.mu.Unlock()
	if r.URL.Path == "/robots.txt" {
		w.Write([]byte("User-agent: *\nAllow: /\n"))
		return
	}
	w.Header().Set("Content-Type", "text/html")
	w.Write([]byte(`<html><body><a href="https://b.example/">b</a></body></html>`))
}

// crawlOnLoopback crawls one seed, every host mapped to srv.
func crawlOnLoopback(t *testing.T, dir string, srv *httptest.Server, extra ...string) (int, string) {
	t.Helper()
	seeds := filepath.Join(t.TempDir(), "seeds.txt")
	if err := os.WriteFile(seeds, []byte("a.example\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	args := append([]string{"crawl", "--until-idle", "--seeds", seeds, "--max-sites", "1", "--min-delay", "1ms",
		"--connect-to", "::127.0.0.1:" + port, "--now", "2026-12-03T01:00:00Z", "--create"}, extra...)
	code, _, stderr := runIn(t, dir, args...)
	return code, stderr
}

// init writes the identity to <data-dir>/config.toml, and a later crawl
// sends it: User-Agent, From, Signature-Agent and, when asked for,
// X-Crawler-Info.
func TestInitThenCrawlSendsIdentity(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	code, out, stderr := runIn(t, dir, append(initArgs, "--crawler-info")...)
	if code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	for _, want := range []string{"User-Agent: " + testUA, "From: " + testFrom, "Signature-Agent: " + testAgent,
		"publish " + testBotPage, "mapthenet keys serve", "mapthenet crawl"} {
		if !strings.Contains(out, want) {
			t.Errorf("init's output lacks %q:\n%s", want, out)
		}
	}
	log := &headerLog{}
	srv := httptest.NewServer(log)
	defer srv.Close()
	code, stderr = crawlOnLoopback(t, dir, srv)
	if code != 0 {
		t.Fatalf("crawl: exit %d: %s", code, stderr)
	}
	if len(log.reqs) == 0 {
		t.Fatal("no request reached the site")
	}
	for _, h := range log.reqs {
		if h.Get("User-Agent") != testUA || h.Get("From") != testFrom || h.Get("X-Crawler-Info") != testBotPage ||
			!strings.Contains(h.Get("Signature-Agent"), testAgent) {
			t.Fatalf("request headers %v, want the identity init wrote", h)
		}
	}

	// Flags on the command line win over the config.
	log.reqs = nil
	code, stderr = crawlOnLoopback(t, dir, srv, "--from", "other@example.org")
	if code != 0 {
		t.Fatalf("crawl --from: exit %d: %s", code, stderr)
	}
	for _, h := range log.reqs {
		if h.Get("From") != "other@example.org" || h.Get("User-Agent") != testUA {
			t.Fatalf("request headers %v, want --from's address and the config's user agent", h)
		}
	}
}

// A crawl whose every host is mapped (tests, the demo, a simulated web)
// needs no identity: it sends the built-in one, with no From and no
// X-Crawler-Info.
func TestMappedCrawlUsesBuiltInIdentity(t *testing.T) {
	t.Parallel()
	log := &headerLog{}
	srv := httptest.NewServer(log)
	defer srv.Close()
	code, stderr := crawlOnLoopback(t, t.TempDir(), srv)
	if code != 0 {
		t.Fatalf("crawl: exit %d: %s", code, stderr)
	}
	if len(log.reqs) == 0 {
		t.Fatal("no request reached the site")
	}
	for _, h := range log.reqs {
		if h.Get("User-Agent") != "MapTheNetBot/1.0 (+https://www.mapthenet.org/bot)" || h.Get("From") != "" || h.Get("X-Crawler-Info") != "" ||
			!strings.Contains(h.Get("Signature-Agent"), "https://www.mapthenet.org/.well-known/http-message-signatures-directory") {
			t.Fatalf("request headers %v, want the built-in identity", h)
		}
	}
}

// The demo crawls a simulated web with every host mapped: it needs no
// identity.
func TestDemoRunsWithoutIdentity(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "demo")
	code, stdout, stderr := runIn(t, t.TempDir(), "demo", "--sites", "20", "--min-delay", "1ms", "--out", out, "--top", "3")
	if code != 0 {
		t.Fatalf("demo: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "politeness checks on the server's request log: 0 violations") {
		t.Errorf("demo output:\n%s", stdout)
	}
}

func TestInitRefusesMissingOrBadValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"nothing", []string{"init"}, "init needs --robots-token, --bot-page, --from"},
		{"no from", []string{"init", "--robots-token", testToken, "--bot-page", testBotPage}, "init needs --from"},
		{"bot page not a URL", []string{"init", "--robots-token", testToken, "--bot-page", "crawler.example.org/bot", "--from", testFrom}, "--bot-page"},
		{"bad from", []string{"init", "--robots-token", testToken, "--bot-page", testBotPage, "--from", "crawler"}, "--from \"crawler\": want an e-mail address"},
		{"user agent without the page", append(initArgs, "--user-agent", "ExampleBot/1.0 (+https://elsewhere.example.org/)"), "name the bot page"},
		{"user agent without a URL", append(initArgs, "--user-agent", "ExampleBot/1.0"), "names no bot page"},
		{"plain http key directory", append(initArgs, "--signature-agent", "http://crawler.example.org/dir"), "want an https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			code, _, stderr := runIn(t, dir, tt.args...)
			if code != exitUsage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, want %d and %q: %s", code, exitUsage, tt.want, stderr)
			}
			oneLine(t, stderr)
			if _, err := os.Stat(dir); err == nil {
				t.Errorf("refused init made %s", dir)
			}
		})
	}
}

// init makes the directory, store, key and config (0644, no temporary file
// left); a second init refuses to replace the config without --force, and
// keeps the key with it.
func TestInitWritesConfigOnce(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	if code, _, stderr := runIn(t, dir, initArgs...); code != 0 {
		t.Fatalf("init: exit %d: %s", code, stderr)
	}
	path := filepath.Join(dir, "config.toml")
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o644 {
		t.Fatalf("config.toml: %v %v, want mode 0644", st, err)
	}
	var got map[string]any
	if _, err := toml.DecodeFile(path, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"robots-token": testToken, "user-agent": testUA, "from": testFrom, "signature-agent": testAgent,
		"authority": "crawler.example.org", "contact": testFrom}
	if len(got) != len(want) {
		t.Errorf("config %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("config %s = %v, want %v", k, got[k], v)
		}
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != "config.toml keys store" {
		t.Errorf("data dir holds %v", names)
	}
	keys, _ := os.ReadDir(filepath.Join(dir, "keys"))
	if len(keys) != 1 {
		t.Fatalf("keys/ holds %d files", len(keys))
	}
	if st, _ := os.Stat(filepath.Join(dir, "keys", keys[0].Name())); st.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v, want 0600", st.Mode().Perm())
	}

	code, _, stderr := runIn(t, dir, initArgs...)
	if code != exitFailure || !strings.Contains(stderr, "config.toml exists: pass --force to replace it") {
		t.Errorf("second init: exit %d: %s", code, stderr)
	}
	oneLine(t, stderr)
	// --force replaces it, even one with a key no command knows (init
	// does not read the config it replaces), and keeps the key.
	if err := os.WriteFile(path, []byte("bogus = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runIn(t, dir, append(initArgs, "--force", "--from", "other@example.org")...)
	if code != 0 || !strings.Contains(out, "kept "+strings.TrimSuffix(keys[0].Name(), ".jwk")) {
		t.Fatalf("init --force: exit %d: %s%s", code, out, stderr)
	}
	if raw, _ := os.ReadFile(path); !strings.Contains(string(raw), `from = "other@example.org"`) {
		t.Errorf("config after --force:\n%s", raw)
	}
}

// The data directory's config: a key no command knows is a usage error; a
// key of another command is skipped; data-dir cannot be set there.
func TestDataDirConfigKeys(t *testing.T) {
	t.Parallel()
	tests := []struct {
		config string
		args   []string
		code   int
		want   string
	}{
		{"bogus = 1\n", []string{"schedule"}, exitUsage, `"bogus" is not a flag of any mapthenet command`},
		{"user-agent = \"X\"\nminn-delay = \"2s\"\n", []string{"crawl", "--until-idle"}, exitUsage, `"minn-delay" is not a flag`},
		{"data-dir = \"/elsewhere\"\n", []string{"schedule"}, exitUsage, `"data-dir" cannot be set in the data directory's own config`},
		{"user-agent = [\n", []string{"schedule"}, exitUsage, "config.toml"},
		{"limit = \"many\"\n", []string{"schedule"}, exitUsage, "limit"},
		// crawl's user-agent is no flag of schedule: skipped, and the
		// command goes on (to its own error: no snapshot).
		{"user-agent = \"X\"\nfrom = \"crawler@example.org\"\n", []string{"schedule"}, exitFailure, "no snapshot"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(tt.config), 0o644); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runIn(t, dir, tt.args...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("config %q, %v: exit %d, want %d and %q: %s", tt.config, tt.args, code, tt.code, tt.want, stderr)
		}
		oneLine(t, stderr)
	}
}

// flags > --config > the data directory's config > defaults.
func TestDataDirConfigPrecedence(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(path, s string) {
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "config.toml"), "a = \"datadir\"\nb = \"datadir\"\nc = \"datadir\"\n")
	cfg := filepath.Join(t.TempDir(), "flags.yaml")
	write(cfg, "b: config\nc: config\n")

	root := newRootCommand(newApp())
	var a, b, c, d string
	probe := &cobra.Command{Use: "probe", RunE: func(*cobra.Command, []string) error { return nil }}
	probe.Flags().StringVar(&a, "a", "default", "")
	probe.Flags().StringVar(&b, "b", "default", "")
	probe.Flags().StringVar(&c, "c", "default", "")
	probe.Flags().StringVar(&d, "d", "default", "")
	root.AddCommand(probe)
	root.SetArgs([]string{"--data-dir", dir, "--config", cfg, "probe", "--c", "flag"})
	if err := root.ExecuteContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if a != "datadir" || b != "config" || c != "flag" || d != "default" {
		t.Errorf("a=%s b=%s c=%s d=%s, want datadir config flag default", a, b, c, d)
	}
}

// crawl's flag defaults are the promised ones (crawl.TestPinnedDefaults
// pins the values behind them).
func TestPinnedCrawlFlagDefaults(t *testing.T) {
	t.Parallel()
	f := newCrawlCommand(newApp()).Flags()
	for name, want := range map[string]string{
		"min-delay":       "1s",
		"user-agent":      "MapTheNetBot/1.0 (+https://www.mapthenet.org/bot)",
		"robots-token":    "MapTheNetBot",
		"signature-agent": "https://www.mapthenet.org/.well-known/http-message-signatures-directory",
		"platform":        "[]", // none given: crawl.DefaultPlatforms (neocities.org=2s)
		"ip-delay":        "0s",
		"from":            "",
		"crawler-info":    "false",
	} {
		if got := f.Lookup(name).DefValue; got != want {
			t.Errorf("--%s defaults to %q, want %q", name, got, want)
		}
	}
}
