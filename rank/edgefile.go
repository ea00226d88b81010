package rank

import (
	"context"
	"log/slog"
	"math"
	"os"
	"runtime"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/internal/gctarget"
	"github.com/mapthenet/mapthenet/rank/edgefile"
)

// progressEvery is how often reading an edge file, and PageRank, log
// progress (a variable so that tests can make them report at every batch
// and iteration).
var progressEvery = 10 * time.Second

// Summary tells what RankEdgeFile did.
type Summary struct {
	Domains        int     // distinct domain names in the edge file
	Rows           int64   // edge rows read, nofollow and self-loops included
	FollowedEdges  int     // distinct followed edges ranked over (no self-loops)
	Ranked         int     // domains with a rank (at least one followed in-link)
	Iterations     int     // PageRank iterations
	Extrapolations int     // of them, how many jumped ahead (PageRank's Result)
	Residual       float64 // L1 change of the last iteration
	NameBytes      int64   // the name table's memory (edge files of names)
	Stages         []data.StageTiming
}

// Stage names in Summary.Stages, in order.
const (
	StageRead     = "read"     // decode Parquet and intern names
	StageRenumber = "renumber" // ids in a canonical order (see renumber)
	StageCSR      = "csr"
	StagePageRank = "pagerank"
	StageRanks    = "ranks"
	StageWrite    = "write"
)

// RankEdgeFile ranks the domains of an edge list: it reads the `src` and
// `dst` string columns of the Parquet file inPath (and `nofollow` when
// present: nofollow rows name domains but give no edge), computes
// PageRank over the followed edges as DESIGN.md says and writes outPath: a
// Parquet file (zstd) of data.RankRow, ranked domains by rank, then the
// unranked ones by name. outPath appears only once complete. The result
// does not depend on the order of the input rows nor on p.Workers.
// logger may be nil.
func RankEdgeFile(ctx context.Context, inPath, outPath string, p Params, logger *slog.Logger) (Summary, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p, err := p.withDefaults()
	if err != nil {
		return Summary{}, err
	}
	limit := memoryLimit()
	defer boundHeap(inPath)()
	var sum Summary
	clock := time.Now()
	stage := func(name string, rows int64) {
		now := time.Now()
		sum.Stages = append(sum.Stages, data.StageTiming{Stage: name, Seconds: now.Sub(clock).Seconds(), Rows: rows})
		logger.Info("rank stage done", "stage", name, "seconds", math.Round(1000*now.Sub(clock).Seconds())/1000, "rows", rows)
		clock = now
	}

	el, err := edgefile.Read(ctx, inPath, edgefile.ReadOptions{Workers: p.Workers, ProgressEvery: progressEvery, MemoryLimit: limit,
		Progress: func(done, total int64) {
			logger.Info("reading edge file", "file", inPath, "rows", done, "of", total,
				"percent", math.Round(1000*float64(done)/float64(max(total, 1)))/10)
		}})
	if err != nil {
		return Summary{}, err
	}
	sum.Domains = el.Names.Len()
	sum.Rows, sum.NameBytes = el.Rows, el.NameBytes
	stage(StageRead, el.Rows)
	logger.Info("read edge file", "file", inPath, "rows", el.Rows, "domains", sum.Domains, "followed_rows", len(el.Dst),
		"name_table_mib", math.Round(float64(el.NameBytes)/(1<<20)), "name_table_bytes_per_domain", math.Round(float64(el.NameBytes)/float64(max(sum.Domains, 1))))

	edges := len(el.Dst)
	collect(edges) // the name table
	names, perm := renumber(el.Names, el.Runs, p.Workers)
	el.Names = nil
	collect(edges) // the renumbering's keys and the names' references by reader
	stage(StageRenumber, int64(names.Len()))

	g, err := buildCSR(uint32(names.Len()), el.Runs, el.Dst, perm, p.Workers)
	if err != nil {
		return Summary{}, err
	}
	el = nil
	collect(edges) // the edge arrays, before PageRank allocates
	sum.FollowedEdges = g.NumEdges()
	stage(StageCSR, int64(g.NumEdges()))

	if p.Progress == nil {
		p.Progress = LogProgress(logger, progressEvery)
	}
	res, err := PageRank(ctx, g, p)
	if err != nil {
		return Summary{}, err
	}
	sum.Iterations, sum.Residual, sum.Extrapolations = res.Iterations, res.Residual, res.Extrapolations
	g.Sources = nil // the degrees are all that is needed from here on
	collect(edges)  // the sources and PageRank's work vectors
	stage(StagePageRank, int64(res.Iterations))
	if res.Residual >= p.Tolerance && g.N > 0 {
		logger.Warn("PageRank stopped before converging", "iterations", res.Iterations, "residual", res.Residual, "tolerance", p.Tolerance)
	}

	order, err := rankOrder(g, res.Scores, names.Name)
	if err != nil {
		return Summary{}, err
	}
	sum.Ranked = len(order)
	stage(StageRanks, int64(len(order)))

	ranked := edgefile.Ranked{Names: names, Scores: res.Scores, InDomains: g.InDegree, OutDomains: g.OutDegree, Order: order}
	if err := edgefile.WriteRanks(outPath, ranked, p.Workers); err != nil {
		return Summary{}, err
	}
	stage(StageWrite, int64(names.Len()))
	logger.Info("ranked edge file", "file", outPath, "domains", sum.Domains, "ranked", sum.Ranked,
		"iterations", sum.Iterations, "extrapolations", sum.Extrapolations, "residual", sum.Residual)
	return sum, nil
}

// boundHeap bounds the heap while an edge file of the given path is
// ranked, and returns the function that lifts the bound. The live heap is
// a few large arrays (about 24 bytes an edge at peak) while reading makes
// a stream of short-lived pages; with Go's default GC target a live heap
// of 1.5 GB (100M edges) may grow to 3 GB or more before a collection.
// A soft memory limit (not a lower GC target, which slows small graphs by
// a third) makes the collector work harder only near the bound: 2.5 GiB,
// or 4 times the file's size for files above 640 MiB. Under that bound
// the GC target is 400 rather than 100: most of the heap lives to the
// end, and collecting it half as often as the default took 7% less CPU
// on the M graph (peak 570 MiB rather than 450). Neither is set when
// GOGC or GOMEMLIMIT is set in the environment: the operator's choice
// wins.
func boundHeap(path string) (restore func()) {
	if gctarget.OperatorSet() {
		return func() {}
	}
	limit := int64(2560) << 20
	if fi, err := os.Stat(path); err == nil {
		limit = max(limit, 4*fi.Size())
	}
	hold := gctarget.HoldLimit(limit)
	release := gctarget.Hold(400)
	return func() {
		release()
		hold.Release()
	}
}

// collect runs the garbage collector when a graph of the given edges
// has just left hundreds of MB of garbage (the name table, the edge
// arrays): the next stage's arrays then take the memory it frees, where
// otherwise they got fresh memory while the garbage waited for a
// collection near the heap's bound. Fresh memory costs a page fault and
// zeroing, and on a virtual machine the host's backing it: on the 2-core
// VM the benchmarks ran on, memory a process first wrote cost 1.4 to 2.3
// CPU-seconds a GiB (huge pages), the same memory released and written
// again 0.09. It also set the peak: on graphgen M
// (bench -size M -stages rank) the peak was 346 MiB without these
// collections and 240 MiB with them.
func collect(edges int) {
	if edges >= 1<<22 {
		runtime.GC()
	}
}

// EdgeGraph is an edge file loaded for ranking: node v is the domain
// Names.Name(v); ids are in renumber's order (the busiest sources first).
type EdgeGraph struct {
	Names *edgefile.Names
	Graph *CSR
	Rows  int64 // edge rows read, nofollow and self-loops included
}

// LoadEdgeFile reads an edge file as RankEdgeFile does (same columns,
// same errors, same memory bound) and returns its graph of followed edges
// without ranking it.
// workers <= 0 means GOMAXPROCS.
func LoadEdgeFile(ctx context.Context, path string, workers int) (*EdgeGraph, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	limit := memoryLimit()
	defer boundHeap(path)()
	el, err := edgefile.Read(ctx, path, edgefile.ReadOptions{Workers: workers, MemoryLimit: limit})
	if err != nil {
		return nil, err
	}
	names, perm := renumber(el.Names, el.Runs, workers)
	g, err := buildCSR(uint32(names.Len()), el.Runs, el.Dst, perm, workers)
	if err != nil {
		return nil, err
	}
	return &EdgeGraph{Names: names, Graph: g, Rows: el.Rows}, nil
}
