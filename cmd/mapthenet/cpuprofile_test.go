package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// MAPTHENET_CPUPROFILE_DIR makes the process write a CPU profile there;
// unset, nothing is written; a directory that cannot take it is reported
// and the command runs anyway.
func TestCPUProfileEnv(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(cpuProfileEnv, dir)
	var stderr bytes.Buffer
	stop := startCPUProfile(&stderr)
	stop()
	files, _ := filepath.Glob(filepath.Join(dir, "mapthenet-*.cpu"))
	if len(files) != 1 || stderr.Len() > 0 {
		t.Fatalf("profiles %v, stderr %q", files, stderr.String())
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Size() == 0 {
		t.Errorf("profile %s: %v, %v", files[0], fi, err)
	}

	t.Setenv(cpuProfileEnv, filepath.Join(dir, "missing"))
	startCPUProfile(&stderr)()
	if !bytes.Contains(stderr.Bytes(), []byte("no CPU profile")) {
		t.Errorf("an unusable directory was not reported: %q", stderr.String())
	}

	t.Setenv(cpuProfileEnv, "")
	startCPUProfile(&stderr)()
	if files, _ := filepath.Glob(filepath.Join(dir, "*.cpu")); len(files) != 1 {
		t.Errorf("unset, a profile was written: %v", files)
	}
}
