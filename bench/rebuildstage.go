package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/rank"
	"github.com/mapthenet/mapthenet/rebuild"
	"github.com/mapthenet/mapthenet/shard"
)

// runRebuild runs a whole rebuild (rebuild.Run) on the store the ingest
// stage filled, in a measured child; it runs the ingest first when there
// is no such store yet.
func runRebuild(ctx context.Context, e *env) ([]result, error) {
	var rows []result
	if s, err := shard.Open(storeDir(e), shard.Options{Graph: graph.Options{ReadOnly: true, NameCache: -1, RecordCache: -1}}); err == nil {
		s.Close()
	} else {
		fmt.Fprintf(os.Stderr, "no %s store yet: ingesting first\n", e.size)
		r, err := runIngest(ctx, e)
		if err != nil {
			return nil, fmt.Errorf("ingest for the rebuild: %w", err)
		}
		rows = append(rows, r...)
	}
	out := filepath.Join(e.dir, "rebuild-"+e.size)
	if err := os.RemoveAll(out); err != nil {
		return nil, err
	}
	var res rebuildResult
	man := &res.Manifest
	m, err := runChild(&res, "rebuild", storeDir(e), out, strconv.Itoa(e.workers), strconv.Itoa(e.mapTop))
	if err != nil {
		return rows, err
	}
	rows = append(rows,
		result{"rebuild", "snapshot", fmt.Sprintf("%d domains, %d edges, %d ranked, %d PageRank iterations",
			man.Counts[data.DomainsFile], man.Counts[data.EdgesFile], man.Rank.Ranked, man.Rank.Iterations)},
		result{"rebuild", "wall (open store, rebuild, close)", secs(m.wall.Seconds())},
		result{"rebuild", "CPU (user+sys)", secs(m.cpu.Seconds())},
		result{"rebuild", "peak memory (max RSS)", fmt.Sprintf("%.0f MiB", float64(m.maxRSSKiB)/1024)},
	)
	rows = append(rows, stolenRow("rebuild", m)...)
	for _, st := range man.Stages {
		v := secs(st.Seconds)
		if cpu, ok := res.StageCPU[st.Stage]; ok {
			v += ", CPU " + secs(cpu)
		}
		if kib, ok := res.StagePeakKiB[st.Stage]; ok {
			v += fmt.Sprintf(", peak so far %.0f MiB", float64(kib)/1024)
		}
		if st.Rows > 0 {
			v += fmt.Sprintf(" (%d rows)", st.Rows)
		}
		rows = append(rows, result{"rebuild", "  stage " + st.Stage, v})
	}
	return rows, nil
}

// rebuildResult is what the rebuild child reports: the manifest, the CPU
// time (user+sys, seconds) of each stage, which a busy machine distorts
// less than the manifest's wall times, and the child's peak resident
// memory at each stage's end (the peak of the first stages, which merge
// the shards into the snapshot's files, is the merge's).
type rebuildResult struct {
	data.Manifest
	StageCPU     map[string]float64 `json:"stage_cpu_seconds"`
	StagePeakKiB map[string]int64   `json:"stage_peak_kib"`
}

// childRebuild opens the store and runs rebuild.Run into a data
// directory of its own; it returns the manifest and each stage's CPU time.
func childRebuild(args []string) (*rebuildResult, error) {
	if len(args) != 4 {
		return nil, fmt.Errorf("rebuild: want STORE DATADIR WORKERS MAPTOP")
	}
	workers, _ := strconv.Atoi(args[2])
	mapTop, _ := strconv.Atoi(args[3])
	// The store opened as the rebuild command opens it (read-only: the
	// bench's store may be another run's).
	s, err := shard.Open(args[0], shard.Options{Graph: rebuild.StoreOptions(graph.Options{ReadOnly: true})})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	// The process's CPU time when each stage last reports (at its end).
	cpuAt := map[string]time.Duration{}
	peakAt := map[string]int64{}
	start := processCPU()
	m, err := rebuild.Run(context.Background(), s, rebuild.Options{
		DataDir:  args[1],
		Now:      time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		Keep:     1,
		Rank:     rank.Params{Workers: workers},
		MapTop:   mapTop,
		Progress: func(stage string, _ int64) { cpuAt[stage], peakAt[stage] = processCPU(), peakRSSKiB() },
	})
	if err != nil {
		return nil, err
	}
	res := &rebuildResult{Manifest: *m, StageCPU: map[string]float64{}, StagePeakKiB: peakAt}
	prev := start
	for _, st := range m.Stages {
		if at, ok := cpuAt[st.Stage]; ok {
			res.StageCPU[st.Stage] = (at - prev).Seconds()
			prev = at
		}
	}
	return res, nil
}

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
