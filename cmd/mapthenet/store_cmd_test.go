package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/snapshot"
)

// readCurrent is the id of the current snapshot ("" when none).
func readCurrent(t *testing.T, dir string) string {
	t.Helper()
	id, _ := snapshot.Local(dir).Current()
	return id
}

// rebuild on a data dir with no store (a typo, an unset MAPTHENET_DIR)
// refuses before writing anything: not even the directory is made.
func TestRebuildRefusesNoStore(t *testing.T) {
	t.Parallel()
	for _, dir := range []string{filepath.Join(t.TempDir(), "typo"), t.TempDir()} {
		code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z")
		if code != exitFailure || !strings.Contains(errOut, "run `mapthenet init` (or pass --create)") {
			t.Fatalf("%s: exit %d, stderr %q", dir, code, errOut)
		}
		if entries, err := os.ReadDir(dir); !os.IsNotExist(err) && len(entries) > 0 {
			t.Errorf("the refused rebuild wrote into %s: %v", dir, entries)
		} else if err == nil && strings.Contains(dir, "typo") {
			t.Errorf("the refused rebuild made %s", dir)
		}
	}
}

func TestCrawlRefusesNoStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	code, _, errOut := runIn(t, dir, "crawl", "--until-idle", "--connect-to", "::127.0.0.1:1")
	if code != exitFailure || !strings.Contains(errOut, "run `mapthenet init` (or pass --create)") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "store")); !os.IsNotExist(err) {
		t.Errorf("the refused crawl made a store: %v", err)
	}
	// --create: a new store, and an idle crawl says why it did nothing.
	code, _, errOut = runIn(t, dir, "crawl", "--until-idle", "--create", "--connect-to", "::127.0.0.1:1")
	if code != 0 || !strings.Contains(errOut, "nothing to crawl") || !strings.Contains(errOut, "no seeds") {
		t.Fatalf("--create: exit %d, stderr %q", code, errOut)
	}
}

func TestBadValuesAreUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fillStore(t, dir)
	for _, args := range [][]string{
		{"rebuild", "--map-top", "-1", "--now", "2026-12-01T03:00:00Z"},
		{"rebuild", "--max-shrink", "1.5", "--now", "2026-12-01T03:00:00Z"},
		{"crawl", "--max-sites-in-flight", "-3"},
		{"rebuild", "--now", "1969-12-31T23:00:00Z"},
		{"rebuild", "--now", "2199-01-01T00:00:00Z"},
		{"schedule", "--now", "1900-01-01T00:00:00Z"},
	} {
		if code, _, errOut := runIn(t, dir, args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d (%s)", args, code, exitUsage, errOut)
		}
	}
	if got := readCurrent(t, dir); got != "" {
		t.Errorf("a refused command made a snapshot: current → %s", got)
	}
}

// The snapshot guard: a rebuild of a much smaller (here: empty) store is
// written but does not become current, exit 1; --accept-shrink publishes it.
func TestRebuildShrinkGuard(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fillStore(t, dir)
	if code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	// The store replaced by an empty one (a lost store, say).
	if err := os.Rename(filepath.Join(dir, "store"), filepath.Join(dir, "store.old")); err != nil {
		t.Fatal(err)
	}
	for _, maxShrink := range []string{"0.5", "0"} { // the guard off: still no empty snapshot
		code, _, errOut := runIn(t, dir, "rebuild", "--create", "--max-shrink", maxShrink, "--now", "2026-12-02T03:00:00Z")
		if code != exitFailure || !strings.Contains(errOut, "stays on 2026-12-01T030000Z") || !strings.Contains(errOut, "--accept-shrink") {
			t.Fatalf("--max-shrink %s: exit %d, stderr %q", maxShrink, code, errOut)
		}
		if got := readCurrent(t, dir); got != "2026-12-01T030000Z" {
			t.Fatalf("current → %s after a guarded rebuild", got)
		}
		if _, err := snapshot.ReadManifest(snapshot.Local(dir), "2026-12-02T030000Z"); err != nil {
			t.Errorf("the guarded snapshot was not written: %v", err)
		}
		if err := snapshot.Local(dir).Remove("2026-12-02T030000Z"); err != nil {
			t.Fatal(err)
		}
	}
	code, _, errOut := runIn(t, dir, "rebuild", "--accept-shrink", "--now", "2026-12-03T03:00:00Z")
	if code != 0 || readCurrent(t, dir) != "2026-12-03T030000Z" {
		t.Fatalf("--accept-shrink: exit %d, current %s: %s", code, readCurrent(t, dir), errOut)
	}
}

// demo --out refuses a directory it did not make: a real crawl's data
// dir, with its store or with the store moved aside to be restored (the
// demo's rebuild would replace current); it runs again in its own.
func TestDemoRefusesForeignStore(t *testing.T) {
	t.Parallel()
	withStore := t.TempDir()
	fillStore(t, withStore)
	storeMoved := rebuiltDir(t)
	if err := os.Rename(storePath(storeMoved), storePath(storeMoved)+".damaged"); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{withStore, storeMoved} {
		current := readCurrent(t, dir)
		code, _, errOut := runIn(t, dir, "demo", "--out", dir, "--sites", "5")
		if code != exitFailure || !strings.Contains(errOut, "demo did not make") {
			t.Fatalf("exit %d, stderr %q", code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, demoMarker)); !os.IsNotExist(err) {
			t.Errorf("the refused demo marked the directory: %v", err)
		}
		if got := readCurrent(t, dir); got != current {
			t.Errorf("current → %s, was %s", got, current)
		}
		if dir == storeMoved {
			if _, err := os.Stat(storePath(dir)); !os.IsNotExist(err) {
				t.Errorf("the refused demo made a store where the real one is to be restored: %v", err)
			}
		}
	}
	// A new or empty directory is claimed, and an earlier demo's again.
	own := filepath.Join(t.TempDir(), "demo")
	for range 2 {
		if err := os.MkdirAll(own, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := claimDemoDir(own); err != nil {
			t.Fatalf("demo's own directory: %v", err)
		}
		if err := os.WriteFile(filepath.Join(own, "seeds.txt"), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestStoreVerifyBackupRestore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fillStore(t, dir)
	code, out, errOut := runIn(t, dir, "store", "verify")
	if code != 0 || !strings.Contains(out, "is sound") {
		t.Fatalf("verify: exit %d\n%s%s", code, out, errOut)
	}
	backup := filepath.Join(t.TempDir(), "store.bak")
	if code, _, errOut := runIn(t, dir, "store", "backup", "--out", backup); code != 0 {
		t.Fatalf("backup: exit %d: %s", code, errOut)
	}
	// Restore only into a data dir without a store.
	if code, _, errOut := runIn(t, dir, "store", "restore", backup); code != exitFailure || !strings.Contains(errOut, "move the store aside") {
		t.Errorf("restore over a store: exit %d, %q", code, errOut)
	}
	other := t.TempDir()
	if code, _, errOut := runIn(t, other, "store", "restore", backup); code != 0 {
		t.Fatalf("restore: exit %d: %s", code, errOut)
	}
	_, a, _ := runIn(t, dir, "store", "verify")
	code, b, errOut := runIn(t, other, "store", "verify")
	counts := func(s string) string { return s[strings.Index(s, "files;"):] }
	if code != 0 || counts(a) != counts(b) {
		t.Errorf("restored store: exit %d, %q, want the original's %q (%s)", code, b, a, errOut)
	}
}
