package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// cpuProfileEnv names a directory: when set, the process writes its CPU
// profile there as mapthenet-PID.cpu (for go tool pprof), from start to
// exit. It is how the fleet's benchmark (e2e BenchmarkFleetCrawl) sees
// where a node process's CPU goes; an environment variable rather than a
// flag because a test's child processes inherit it unchanged.
const cpuProfileEnv = "MAPTHENET_CPUPROFILE_DIR"

// startCPUProfile starts the CPU profile cpuProfileEnv asks for, if any,
// and returns what stops it (a no-op otherwise). A profile that cannot
// start is reported on stderr and the command runs anyway.
func startCPUProfile(stderr io.Writer) (stop func()) {
	dir := os.Getenv(cpuProfileEnv)
	if dir == "" {
		return func() {}
	}
	path := filepath.Join(dir, fmt.Sprintf("mapthenet-%d.cpu", os.Getpid()))
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "mapthenet: %s: no CPU profile: %v\n", cpuProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(stderr, "mapthenet: CPU profile %s: %v\n", path, err)
		}
	}
}
