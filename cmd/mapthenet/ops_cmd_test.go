package main

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// While a crawl holds the store, rebuild runs inside it over crawl.sock and
// prints the same summary as a local rebuild.
func TestRebuildInsideCrawl(t *testing.T) {
	t.Parallel()
	local, remote := t.TempDir(), t.TempDir()
	fillStore(t, local)
	fillStore(t, remote)
	args := []string{"rebuild", "--now", "2026-12-01T03:00:00Z", "--tiers", testTiersFlag, "--keep", "2", "--workers", "1"}
	code, want, errOut := runIn(t, local, args...)
	if code != 0 {
		t.Fatalf("local: exit %d: %s", code, errOut)
	}

	store, err := graph.Open(filepath.Join(remote, "store"), graph.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv, err := serveControl(shard.One(store), remote, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	code, got, errOut := runIn(t, remote, args...)
	if code != 0 {
		t.Fatalf("via the crawl: exit %d: %s", code, errOut)
	}
	// The same counts and iterations; only the stage timings differ.
	trim := func(s string) string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		lines[0] = strings.Replace(lines[0], local, "DIR", 1)
		lines[0] = strings.Replace(lines[0], remote, "DIR", 1)
		return strings.Join(lines[:len(lines)-1], "\n")
	}
	if trim(got) != trim(want) {
		t.Errorf("summary via the crawl:\n%s\nlocal:\n%s", got, want)
	}
	if target, err := snapshot.Local(remote).Current(); err != nil || target != "2026-12-01T030000Z" {
		t.Errorf("current → %q (%v)", target, err)
	}

	// A second rebuild while one runs (here: its lock held) refuses.
	release, _, err := control.Lock(filepath.Join(remote, control.RebuildLockName), control.Owner{PID: os.Getpid(), Command: "mapthenet crawl"})
	if err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runIn(t, remote, "rebuild", "--now", "2026-12-01T04:00:00Z")
	release()
	if code != exitBusy || !strings.Contains(errOut, "a rebuild is already running in mapthenet crawl (pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second rebuild: exit %d: %s", code, errOut)
	}

	// Nobody answers on the socket: busy, naming the holder.
	srv.Close()
	if err := control.WriteOwner(filepath.Join(remote, control.StoreOwnerName), control.Self("mapthenet crawl", time.Now())); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = runIn(t, remote, "rebuild", "--now", "2026-12-01T05:00:00Z")
	if code != exitBusy || !strings.Contains(errOut, "in use by mapthenet crawl (pid "+strconv.Itoa(os.Getpid())) ||
		!strings.Contains(errOut, "no crawl answers") {
		t.Errorf("no socket: exit %d: %s", code, errOut)
	}
}

// Two local rebuilds: the second refuses at once, naming the first.
func TestRebuildTwiceLocal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fillStore(t, dir)
	before := storeListing(t, dir)
	release, _, err := control.Lock(filepath.Join(dir, control.RebuildLockName), control.Owner{PID: 4242, Command: "mapthenet rebuild"})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z")
	if code != exitBusy || !strings.Contains(errOut, "a rebuild is already running in mapthenet rebuild (pid 4242") {
		t.Errorf("exit %d: %s", code, errOut)
	}
	if after := storeListing(t, dir); after != before {
		t.Errorf("the refused rebuild opened the store:\n%s\n%s", before, after)
	}
}

// A second crawl on a data directory in use refuses, naming the first.
func TestCrawlRefusedWhileStoreHeld(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := graph.Open(filepath.Join(dir, "store"), graph.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if err := control.WriteOwner(filepath.Join(dir, control.StoreOwnerName), control.Self("mapthenet crawl", time.Now())); err != nil {
		t.Fatal(err)
	}
	// Every host mapped: no identity needed to get as far as the store.
	code, _, errOut := runIn(t, dir, "crawl", "--until-idle", "--connect-to", "::127.0.0.1:1")
	want := "data dir " + dir + " is in use by mapthenet crawl (pid " + strconv.Itoa(os.Getpid()) + ", started "
	if code != exitBusy || !strings.Contains(errOut, want) {
		t.Errorf("exit %d: %s\nwant %q", code, errOut, want)
	}
}

// rebuild logs one line per stage (seconds and rows), as JSON with
// --log-format json, and the manifest holds the same stages.
func TestRebuildStageLog(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fillStore(t, dir)
	code, _, errOut := runIn(t, dir, "--log-format", "json", "rebuild", "--now", "2026-12-01T03:00:00Z", "--tiers", testTiersFlag)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	logged := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(errOut), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("not a JSON log line: %q", line)
		}
		if m["msg"] == "rebuild stage done" {
			_, secs := m["seconds"].(float64)
			_, rows := m["rows"].(float64)
			if !secs || !rows {
				t.Errorf("stage line without seconds or rows: %q", line)
			}
			logged[m["stage"].(string)] = true
		}
	}
	s, err := snapshot.Open(dir, "")
	if err != nil {
		t.Fatal(err)
	}
	m := s.Manifest
	if len(m.Stages) < 5 {
		t.Errorf("manifest stages: %+v", m.Stages)
	}
	for _, s := range m.Stages {
		if !logged[s.Stage] {
			t.Errorf("stage %s in the manifest but not logged", s.Stage)
		}
	}
}
