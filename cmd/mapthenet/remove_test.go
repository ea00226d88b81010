package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/removal"
	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/graph"
)

type txtFake map[string][]string

func (f txtFake) LookupTXT(_ context.Context, name string) ([]string, error) { return f[name], nil }

// notFound answers every fetch with 404, and notes whether it was signed.
type notFound struct{ unsigned int }

func (n *notFound) Do(r *http.Request) (*http.Response, error) {
	if r.Header.Get("Signature") == "" {
		n.unsigned++
	}
	return &http.Response{StatusCode: 404, Body: io.NopCloser(strings.NewReader("")), Request: r}, nil
}

// fakeChecker points remove verify at a fake resolver and web: an option
// for runWith.
func fakeChecker(txt txtFake, web *notFound) appOption {
	return func(a *app) {
		a.newRemovalChecker = func(s *webbotauth.Signer, clock func() time.Time) *removal.Checker {
			return &removal.Checker{Resolver: txt, Client: &signedDoer{s: s, clock: clock, next: web}}
		}
	}
}

type signedDoer struct {
	s     *webbotauth.Signer
	clock func() time.Time
	next  removal.Doer
}

func (d *signedDoer) Do(r *http.Request) (*http.Response, error) {
	if err := d.s.Sign(r, d.clock()); err != nil {
		return nil, err
	}
	return d.next.Do(r)
}

func seedStore(t *testing.T, dataDir string, names ...string) {
	t.Helper()
	st, err := graph.Open(filepath.Join(dataDir, "store"), graph.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.AddDomains(names, time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), true); err != nil {
		t.Fatal(err)
	}
}

// known reports whether the store still knows name.
func known(t *testing.T, dataDir, name string) bool {
	t.Helper()
	st, err := graph.Open(filepath.Join(dataDir, "store"), graph.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, found, err := st.Domain(name)
	if err != nil && !errors.Is(err, graph.ErrRemoved) {
		t.Fatal(err)
	}
	return found && err == nil
}

var tokenLine = regexp.MustCompile(`(?m)^token for ([a-z.]+): ([0-9a-f]{32})$`)

func TestRemoveToken(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, out, errOut := runIn(t, dir, "remove", "token", "https://WWW.Example.com/some/page")
	m := tokenLine.FindStringSubmatch(out)
	if code != 0 || m == nil || m[1] != "example.com" {
		t.Fatalf("remove token: %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"mapthenet-verification=" + m[2],
		"https://example.com/.well-known/mapthenet-verification.txt",
		`<meta name="mapthenet-verification" content="` + m[2] + `">`,
		"mapthenet remove verify example.com",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	_, out2, _ := runIn(t, dir, "remove", "token", "example.com")
	if m2 := tokenLine.FindStringSubmatch(out2); m2 == nil || m2[2] != m[2] {
		t.Errorf("token not stable: %q then %q", m[2], out2)
	}
	fi, err := os.Stat(filepath.Join(dir, "keys", removal.SecretFile))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secret file: %v %v", fi, err)
	}
}

func TestRemoveVerify(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seedStore(t, dir, "example.com", "example.org")
	_, out, _ := runIn(t, dir, "remove", "token", "example.com")
	tok := tokenLine.FindStringSubmatch(out)[2]

	// No proof: nothing removed, every proof's finding printed, exit 1.
	web := &notFound{}
	chk := fakeChecker(txtFake{"example.com": {"v=spf1 -all"}}, web)
	code, out, errOut := runWith(t, chk, dir, "remove", "verify", "example.com")
	if code != 1 || !strings.Contains(errOut, "no proof of ownership found; nothing removed") {
		t.Errorf("unproven verify: %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		`dns: TXT records found: ["v=spf1 -all"], none matches mapthenet-verification=` + tok,
		"file: https: 404; http: 404",
		"meta: https: home page 404; http: home page 404",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if web.unsigned != 0 {
		t.Errorf("%d proof fetches were not signed", web.unsigned)
	}
	if !known(t, dir, "example.com") {
		t.Fatal("a failed proof removed the domain")
	}

	// The TXT record published: removed, the other domain kept.
	chk = fakeChecker(txtFake{"example.com": {"v=spf1 -all", "mapthenet-verification=" + tok}}, &notFound{})
	code, out, errOut = runWith(t, chk, dir, "--log-format", "json", "remove", "verify", "example.com", "--now", "2026-12-02T12:00:00Z")
	if code != 0 || !strings.Contains(out, "example.com removed (proof: dns: TXT mapthenet-verification="+tok+" on example.com)") {
		t.Fatalf("verify: %d\n%s%s", code, out, errOut)
	}
	if !strings.Contains(errOut, `"msg":"domain removed","domain":"example.com"`) || !strings.Contains(errOut, `"at":"2026-12-02T12:00:00Z"`) {
		t.Errorf("removal not logged with its proof and time:\n%s", errOut)
	}
	if known(t, dir, "example.com") || !known(t, dir, "example.org") {
		t.Error("store after removal: example.com should be gone, example.org kept")
	}
}

func TestRemoveForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seedStore(t, dir, "example.net")
	code, out, errOut := runIn(t, dir, "remove", "force", "www.example.net", "--reason", "e-mail from the registrant")
	if code != 0 || !strings.Contains(out, "example.net removed (forced: e-mail from the registrant)") {
		t.Fatalf("force: %d\n%s%s", code, out, errOut)
	}
	if known(t, dir, "example.net") {
		t.Error("forced removal left the domain")
	}
}

func TestRemoveUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"remove", "token"}, 2, "needs exactly one DOMAIN"},
		{[]string{"remove", "token", "a.com", "b.com"}, 2, "needs exactly one DOMAIN"},
		{[]string{"remove", "token", "127.0.0.1"}, 2, "IP address"},
		{[]string{"remove", "token", "co.uk"}, 2, "public suffix"},
		{[]string{"remove", "verify"}, 2, "needs exactly one DOMAIN"},
		{[]string{"remove", "verify", "example.com"}, 1, "issue a token first"},
		{[]string{"remove", "force", "example.com"}, 2, "--reason is required"},
		{[]string{"remove", "force", "example.com", "--reason", "x", "--now", "soon"}, 2, "RFC 3339"},
		{[]string{"remove", "bogus"}, 2, "unknown command"},
	} {
		code, _, errOut := runIn(t, filepath.Join(t.TempDir(), "data"), tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d (%q), want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}

// A store held by another process that does not answer on crawl.sock (a
// rebuild on its own, a crawl without its socket) is exit status 3, and
// nothing is removed.
func TestRemoveBusyStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	seedStore(t, dir, "example.net")
	st, err := graph.Open(filepath.Join(dir, "store"), graph.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runIn(t, dir, "remove", "force", "example.net", "--reason", "x")
	st.Close()
	if code != 3 || !strings.Contains(errOut, "no crawl answers on") || !strings.Contains(errOut, "run the removal again when it has finished") {
		t.Errorf("force on a busy store: %d %s", code, errOut)
	}
	if !known(t, dir, "example.net") {
		t.Error("removed anyway")
	}
}
