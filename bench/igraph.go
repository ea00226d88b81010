package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graphgen"
)

// findIgraph returns a python interpreter that can import igraph, or "".
// Debian's python3-igraph lives in the system python, which need not be
// the python3 first on PATH.
func findIgraph() string {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(py, "-c", "import igraph").Run() == nil {
			return py
		}
	}
	return ""
}

// igraphScript reads a text edge list of ids ("src dst" lines; the
// followed edges of the generated graph), times igraph's PageRank with
// DESIGN.md's parameters and writes the scores as float64s by id.
const igraphScript = `
import sys, time, json, array, igraph
path, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
t0 = time.perf_counter()
g = igraph.Graph.Read_Edgelist(path, directed=True)
if g.vcount() < n:
    g.add_vertices(n - g.vcount())
t1 = time.perf_counter()
pr = g.pagerank(damping=0.85, directed=True)
t2 = time.perf_counter()
array.array('d', pr).tofile(open(out, 'wb'))
hwm = [int(l.split()[1]) for l in open('/proc/self/status') if l.startswith('VmHWM:')]
print(json.dumps({"load_seconds": t1 - t0, "pagerank_seconds": t2 - t1, "n": g.vcount(), "hwm_kib": hwm[0] if hwm else 0}))
`

type igraphResult struct {
	LoadSeconds     float64 `json:"load_seconds"`
	PageRankSeconds float64 `json:"pagerank_seconds"`
	N               int     `json:"n"`
	HWMKiB          int64   `json:"hwm_kib"` // its own peak (see runChild)
	scoresPath      string
	cpu             time.Duration // the python process's user + system time
	maxRSSKiB       int64
}

func runIgraph(e *env) (igraphResult, error) {
	cfg, err := graphgen.Size(e.size)
	if err != nil {
		return igraphResult{}, err
	}
	g, err := graphgen.New(cfg)
	if err != nil {
		return igraphResult{}, err
	}
	list := filepath.Join(e.dir, fmt.Sprintf("edges-%s-seed%d.txt", e.size, cfg.Seed))
	ids, err := appearing(g)
	if err != nil {
		return igraphResult{}, err
	}
	if _, err := os.Stat(list); err != nil {
		if err := writeIDList(g, ids, list); err != nil {
			return igraphResult{}, err
		}
	}
	res := igraphResult{scoresPath: filepath.Join(e.dir, "igraph-scores-"+e.size+".bin")}
	cmd := exec.Command(e.igraph, "-c", igraphScript, list, strconv.Itoa(len(ids)), res.scoresPath)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return res, fmt.Errorf("igraph: %w", err)
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		res.maxRSSKiB = ru.Maxrss
		res.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	if err := json.Unmarshal(out, &res); err != nil {
		return res, fmt.Errorf("igraph: %w (output %q)", err, out)
	}
	if res.HWMKiB > 0 {
		res.maxRSSKiB = res.HWMKiB
	}
	return res, nil
}

// appearing lists the generator ids of the domains that appear in some
// edge (nofollow ones included): the domains of the edge file. igraph gets
// them as vertices 0..len-1 in this order, so that both sides rank the
// same graph (the teleport share is 1/N).
func appearing(g *graphgen.Generator) ([]uint32, error) {
	seen := make([]bool, g.Domains())
	err := g.Edges(func(s, d uint32, _ bool) error {
		seen[s], seen[d] = true, true
		return nil
	})
	var ids []uint32
	for id, ok := range seen {
		if ok {
			ids = append(ids, uint32(id))
		}
	}
	return ids, err
}

// writeIDList writes the followed edges as "src dst" lines of compact ids
// (positions in ids).
func writeIDList(g *graphgen.Generator, ids []uint32, path string) error {
	compact := make([]uint32, g.Domains())
	for i, id := range ids {
		compact[id] = uint32(i)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var b []byte
	err = g.Edges(func(s, d uint32, nofollow bool) error {
		if nofollow {
			return nil
		}
		b = strconv.AppendUint(b[:0], uint64(compact[s]), 10)
		b = append(b, ' ')
		b = strconv.AppendUint(b, uint64(compact[d]), 10)
		b = append(b, '\n')
		_, err := w.Write(b)
		return err
	})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

// compareScores returns the largest difference between our scores (the
// rank child's output file, by domain) and igraph's (by generator id).
func compareScores(e *env, ranksPath string, ig igraphResult) (float64, error) {
	start := time.Now()
	defer func() { fmt.Fprintf(os.Stderr, "compared scores in %.1fs\n", time.Since(start).Seconds()) }()
	cfg, _ := graphgen.Size(e.size)
	g, err := graphgen.New(cfg)
	if err != nil {
		return 0, err
	}
	rows, err := parquet.ReadFile[data.RankRow](ranksPath)
	if err != nil {
		return 0, err
	}
	ours := make(map[string]float64, len(rows))
	for _, r := range rows {
		ours[r.Domain] = r.Score
	}
	raw, err := os.ReadFile(ig.scoresPath)
	if err != nil {
		return 0, err
	}
	ids, err := appearing(g)
	if err != nil {
		return 0, err
	}
	if len(raw) != 8*len(ids) || len(ids) != len(rows) {
		return 0, fmt.Errorf("igraph wrote %d scores, we have %d domains, the graph %d", len(raw)/8, len(rows), len(ids))
	}
	maxDiff := 0.0
	var buf []byte
	for i, id := range ids {
		theirs := math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		buf = g.AppendName(buf[:0], id)
		s, ok := ours[string(buf)]
		if !ok {
			return 0, fmt.Errorf("domain %s missing from our ranks", buf)
		}
		maxDiff = max(maxDiff, math.Abs(s-theirs))
	}
	return maxDiff, nil
}
