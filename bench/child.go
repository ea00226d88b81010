package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mapthenet/mapthenet/rank"
)

// childFlag, as the first argument, makes this program a measured child:
// bench -child-run JOB ARGS... runs one job and prints its result as JSON.
const childFlag = "-child-run"

// profileEnv names the directory a child writes its CPU profile to
// (bench -cpuprofile), the child's environment being how it learns it.
const profileEnv = "MAPTHENET_BENCH_CPUPROFILE"

// measured is what the parent learns of a child run.
type measured struct {
	wall      time.Duration
	cpu       time.Duration // user + system
	maxRSSKiB int64
	stolen    float64 // share of the machine's CPU time the hypervisor took meanwhile; -1: unknown
}

// runChild runs this program as a child doing job and decodes its JSON
// output into out.
func runChild(out any, job string, args ...string) (measured, error) {
	self, err := os.Executable()
	if err != nil {
		return measured{}, err
	}
	cmd := exec.Command(self, append([]string{childFlag, job}, args...)...)
	hwm, err := os.CreateTemp("", "mapthenet-bench-hwm")
	if err != nil {
		return measured{}, err
	}
	hwm.Close()
	defer os.Remove(hwm.Name())
	cmd.Env = append(os.Environ(), hwmEnv+"="+hwm.Name())
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = os.Stderr
	before, beforeOK := readHostCPU()
	start := time.Now()
	err = cmd.Run()
	m := measured{wall: time.Since(start), stolen: -1}
	if after, ok := readHostCPU(); ok && beforeOK {
		m.stolen = after.stolenSince(before)
	}
	if err != nil {
		return m, fmt.Errorf("child %s: %w", job, err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.maxRSSKiB = ru.Maxrss // KiB on Linux
		m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	// The child's own peak: Linux's maxrss of a child counts the parent's
	// resident memory when it was started (exec keeps the high-water mark
	// of the memory it replaces), and this parent may hold a generated
	// graph's hundreds of MB.
	if b, err := os.ReadFile(hwm.Name()); err == nil {
		if kib, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && kib > 0 {
			m.maxRSSKiB = kib
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return m, fmt.Errorf("child %s: bad output %q: %w", job, stdout.String(), err)
	}
	return m, nil
}

// hostCPU is the first line of /proc/stat: the machine's CPU time so far,
// in ticks, all of it and the part a hypervisor took (steal). On a VM
// whose host is busy, steal makes every figure slower: the bench prints
// it so that a slow run can be told from a slow program.
type hostCPU struct{ total, steal uint64 }

func readHostCPU() (hostCPU, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return hostCPU{}, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return hostCPU{}, false
	}
	var c hostCPU
	for i, v := range f[1:] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return hostCPU{}, false
		}
		if i < 8 { // user nice system idle iowait irq softirq steal; guest is counted in user
			c.total += n
		}
		if i == 7 {
			c.steal = n
		}
	}
	return c, true
}

// stolenSince is the share of the CPU time between before and c that was
// stolen.
func (c hostCPU) stolenSince(before hostCPU) float64 {
	if c.total <= before.total {
		return 0
	}
	return float64(c.steal-before.steal) / float64(c.total-before.total)
}

// stolenRow is the result row that reports m.stolen, if known.
func stolenRow(stage string, m measured) []result {
	if m.stolen < 0 {
		return nil
	}
	note := ""
	if m.stolen >= 0.05 {
		note = ": the host was busy, figures are slower than the program"
	}
	return []result{{stage, "CPU stolen by the host", fmt.Sprintf("%.0f%%%s", 100*m.stolen, note)}}
}

// hwmEnv names the file a child writes its peak resident memory to
// (VmHWM, KiB).
const hwmEnv = "MAPTHENET_BENCH_HWM"

// peakRSSKiB is this process's peak resident memory (VmHWM), or 0.
func peakRSSKiB() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kib
		}
	}
	return 0
}

// childMain is main in a child.
func childMain(args []string) int {
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "bench child: no job")
		return 2
	}
	if dir := os.Getenv(profileEnv); dir != "" {
		f, err := os.Create(filepath.Join(dir, args[0]+".cpu"))
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench child: cpu profile:", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	var out any
	var err error
	switch args[0] {
	case "rank": // IN OUT WORKERS
		out, err = childRank(args[1:])
	case "rankids": // IN OUT WORKERS
		out, err = childRankIDs(args[1:])
	case "powercheck": // IN K
		out, err = childPowerCheck(args[1:])
	case "iteration": // IN WORKERS
		out, err = childIteration(args[1:])
	case "ingest": // SIZE STORE BATCH
		out, err = childIngest(args[1:])
	case "rebuild": // STORE DATADIR WORKERS MAPTOP
		out, err = childRebuild(args[1:])
	case "communities": // SIZE WORKERS
		out, err = childCommunities(args[1:])
	default:
		err = fmt.Errorf("unknown job %q", args[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench child:", err)
		return 1
	}
	if path := os.Getenv(hwmEnv); path != "" {
		os.WriteFile(path, []byte(strconv.FormatInt(peakRSSKiB(), 10)), 0o600)
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "bench child:", err)
		return 1
	}
	return 0
}

func childRank(args []string) (rank.Summary, error) {
	if len(args) != 3 {
		return rank.Summary{}, fmt.Errorf("rank: want IN OUT WORKERS")
	}
	workers, _ := strconv.Atoi(args[2])
	return rank.RankEdgeFile(context.Background(), args[0], args[1], rank.Params{Workers: workers}, nil)
}

// iterationResult is one PageRank iteration's time on the loaded graph.
type iterationResult struct {
	Seconds float64 `json:"seconds"`
	Edges   int     `json:"edges"`
}

// childIteration loads the graph and times PageRank iterations: the time
// of 11 iterations less that of 1, over 10, so that the setup (allocating
// and filling the score arrays) does not count.
func childIteration(args []string) (iterationResult, error) {
	if len(args) != 2 {
		return iterationResult{}, fmt.Errorf("iteration: want IN WORKERS")
	}
	workers, _ := strconv.Atoi(args[1])
	ctx := context.Background()
	eg, err := rank.LoadEdgeFile(ctx, args[0], workers)
	if err != nil {
		return iterationResult{}, err
	}
	timeIters := func(k int) (time.Duration, error) {
		best := time.Duration(1 << 62)
		for range 3 { // best of 3: the machine may be busy
			p := rank.Params{MaxIterations: k, Tolerance: 1e-300, Workers: workers}
			start := time.Now()
			if _, err := rank.PageRank(ctx, eg.Graph, p); err != nil {
				return 0, err
			}
			best = min(best, time.Since(start))
		}
		return best, nil
	}
	one, err := timeIters(1)
	if err != nil {
		return iterationResult{}, err
	}
	eleven, err := timeIters(11)
	if err != nil {
		return iterationResult{}, err
	}
	return iterationResult{Seconds: max(eleven-one, 0).Seconds() / 10, Edges: eg.Graph.NumEdges()}, nil
}
