package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

const keysNow = "2026-12-02T12:00:00Z"

// readDirectory parses the HTTP/1.1 message keys directory prints and
// checks its digest; it returns the key ids published and the response.
func readDirectory(t *testing.T, msg string) ([]string, *http.Response) {
	t.Helper()
	resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(msg)), nil)
	if err != nil {
		t.Fatalf("not an HTTP message: %v\n%s", err, msg)
	}
	body, _ := io.ReadAll(resp.Body)
	sum := sha256.Sum256(body)
	if got, want := resp.Header.Get("Content-Digest"), "sha-256=:"+base64.StdEncoding.EncodeToString(sum[:])+":"; got != want {
		t.Errorf("Content-Digest %s, want %s", got, want)
	}
	if strings.Contains(string(body), `"d"`) {
		t.Fatal("directory shows a private key")
	}
	var set webbotauth.JWKS
	if err := json.Unmarshal(body, &set); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, k := range set.Keys {
		ids = append(ids, k.Kid)
	}
	return ids, resp
}

func TestKeysCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := func(args ...string) (int, string, string) {
		return runIn(t, dir, args...)
	}
	code, out, errOut := run("keys", "init", "--now", keysNow)
	if code != 0 || !strings.Contains(out, "created signing key ") || !strings.Contains(out, webbotauth.DefaultAgentURL) {
		t.Fatalf("keys init: %d\n%s%s", code, out, errOut)
	}
	kid := strings.Fields(strings.SplitN(out, "\n", 2)[0])[3]
	if _, err := os.Stat(filepath.Join(dir, "keys", kid+".jwk")); err != nil {
		t.Errorf("key file: %v", err)
	}
	if code, _, errOut := run("keys", "init"); code != 1 || !strings.Contains(errOut, "already exists") {
		t.Errorf("second keys init: %d %s", code, errOut)
	}

	code, out, errOut = run("keys", "directory", "--now", keysNow)
	if code != 0 || !strings.HasPrefix(out, "HTTP/1.1 200 OK\r\n") {
		t.Fatalf("keys directory: %d\n%s%s", code, out, errOut)
	}
	ids, resp := readDirectory(t, out)
	if len(ids) != 1 || ids[0] != kid || resp.Header.Get("Content-Type") != webbotauth.DirectoryContentType ||
		!strings.HasPrefix(resp.Header.Get("Signature-Input"), `binding0=("@authority";req "content-digest");created=1796212800;expires=1796817600;keyid="`+kid+`"`) {
		t.Errorf("directory: keys %v, headers %v", ids, resp.Header)
	}

	code, out, errOut = run("keys", "rotate", "--now", "2026-12-03T12:00:00Z")
	if code != 0 || !strings.Contains(out, "signs from 2026-12-04T12:00:00Z") ||
		!strings.Contains(out, "key "+kid+" signs until 2026-12-04T12:00:00Z, published until 2026-12-05T12:05:00Z") {
		t.Fatalf("keys rotate: %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := run("keys", "rotate", "--now", "2026-12-03T13:00:00Z"); code != 1 || !strings.Contains(errOut, "pending") {
		t.Errorf("second rotate: %d %s", code, errOut)
	}
	code, out, _ = run("keys", "directory", "--now", "2026-12-03T12:00:00Z", "--authority", "Crawler.Example:443")
	if ids, resp := readDirectory(t, out); code != 0 || len(ids) != 2 || !strings.Contains(resp.Header.Get("Signature"), "binding1=:") {
		t.Errorf("directory after rotation: %d keys %v", code, ids)
	}
	// After the old key's retirement only the new key is published.
	code, out, _ = run("keys", "directory", "--now", "2026-12-05T12:05:00Z")
	if ids, _ := readDirectory(t, out); code != 0 || len(ids) != 1 || ids[0] == kid {
		t.Errorf("directory after retirement: %d keys %v", code, ids)
	}
}

func TestKeysUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"keys", "init", "extra"}, 2, "takes no arguments"},
		{[]string{"keys", "init", "--now", "yesterday"}, 2, "RFC 3339"},
		{[]string{"keys", "directory", "--authority", "host/path"}, 2, "want a host or host:port"},
		{[]string{"keys", "directory", "--authority", ""}, 2, "want a host or host:port"},
		{[]string{"keys", "directory"}, 1, "no signing key"},
		{[]string{"keys", "rotate"}, 1, "keys init first"},
		{[]string{"keys", "serve"}, 1, "no signing key"},
		{[]string{"keys", "bogus"}, 2, ""},
		{[]string{"keys", "init", "--bogus"}, 2, "unknown flag"},
	} {
		code, _, errOut := runIn(t, filepath.Join(t.TempDir(), "data"), tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d (%q), want %d and %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}

func TestKeysHelp(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"init", "rotate", "directory", "serve"} {
		code, out, _ := runIn(t, filepath.Join(t.TempDir(), "data"), "keys", sub, "--help")
		if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "mapthenet keys "+sub) {
			t.Errorf("keys %s --help: %d\n%s", sub, code, out)
		}
	}
}

func TestKeysServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if code, _, errOut := runIn(t, dir, "keys", "init"); code != 0 {
		t.Fatal(errOut)
	}
	a := newApp()
	a.DataDir, a.logger = dir, slog.New(slog.DiscardHandler)
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- a.runKeysServe(ctx, io.Discard, keysServeOptions{Addr: "127.0.0.1:0"}, func(at string) { addr <- at })
	}()
	var at string
	select {
	case at = <-addr:
	case err := <-done:
		t.Fatal(err)
	}
	client := &http.Client{}
	resp, err := client.Get("http://" + at + webbotauth.DirectoryPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	if resp.StatusCode != 200 || resp.Header.Get("Signature") == "" || !strings.Contains(string(body), `"kty":"OKP"`) {
		t.Errorf("GET directory: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
}
