// Package deploy holds what installs mapthenet on a machine (systemd units);
// its test checks the units with systemd's own verifier.
package deploy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnits runs `systemd-analyze verify` on the units, with the
// binary's path pointed at one that exists here. Any complaint fails the
// test: verify exits 0 on a line it ignores ("Failed to parse ...").
func TestSystemdUnits(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("SKIP: systemd-analyze not installed (Debian package systemd); the units are not verified")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	units, _ := filepath.Glob("systemd/mapthenet-*")
	if len(units) != 3 {
		t.Fatalf("units %v, want the crawl service, the rebuild service and its timer", units)
	}
	dir := t.TempDir()
	var paths []string
	for _, u := range units {
		raw, err := os.ReadFile(u)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(raw), "/usr/local/bin/mapthenet", self)
		p := filepath.Join(dir, filepath.Base(u))
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	out, err := exec.Command(analyze, append([]string{"verify"}, paths...)...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}
