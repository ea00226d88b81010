package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
)

// TestServeCommand serves a data directory with a signing key but no
// snapshot yet: the pages say so (503), and the bot page and the key
// directory work already. The routes over a snapshot are the site
// package's tests.
func TestServeCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := newApp()
	a.DataDir, a.logger = dir, slog.New(slog.DiscardHandler)
	if _, err := webbotauth.Init(a.keysDir(), time.Now()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	addr := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- a.runServe(ctx, io.Discard, serveOptions{Addr: "127.0.0.1:0", Poll: time.Hour, RemovalChecks: true, Token: "ExampleBot"},
			func(at string) { addr <- at })
	}()
	var at string
	select {
	case at = <-addr:
	case err := <-done:
		t.Fatal(err)
	}
	client := &http.Client{}
	for path, want := range map[string]int{"/": 503, "/api/rankings": 503, "/bot": 200, webbotauth.DirectoryPath: 200, "/remove": 200} {
		resp, err := client.Get("http://" + at + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
		if path == "/bot" && !strings.Contains(string(body), "ExampleBot") {
			t.Errorf("the bot page does not name the robots token")
		}
	}
	client.CloseIdleConnections()
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve: %v", err)
	}
	for _, o := range []serveOptions{{Addr: "127.0.0.1:0", Poll: 0}, {Addr: "127.0.0.1:0", Poll: time.Second, AllowRemovals: true}} {
		var ue usageError
		if err := a.runServe(context.Background(), io.Discard, o, nil); !errors.As(err, &ue) {
			t.Errorf("%+v: %v, want a usage error", o, err)
		}
	}
}
