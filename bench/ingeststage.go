package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/shard"
)

// ingestBatch is how many visits go into one RecordVisits call: the
// crawl's recorder writes up to 256 at once (crawl/recorder.go).
const ingestBatch = 256

// ingestCallers is how many goroutines call RecordVisits at once, as the
// crawl's recorder does: while one batch commits, the next is prepared
// (graph/pipeline.go).
const ingestCallers = 2

// ingestChunk is how many batches are made before they are recorded, so
// that making the visits stays out of the timing.
const ingestChunk = 64

// ingestAt is the start time of every ingested visit.
var ingestAt = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

// linkWords are the link words the ingested links carry, one each.
var linkWords = []string{"news", "blog", "home", "shop", "music", "games", "sport", "travel", "food", "science"}

// storeDir is where the ingest stage leaves the store of a size for the
// rebuild stage.
func storeDir(e *env) string {
	if e.shards > 1 {
		return filepath.Join(e.dir, fmt.Sprintf("store-%s-k%d", e.size, e.shards))
	}
	return filepath.Join(e.dir, "store-"+e.size)
}

// ingestResult is what the ingest child reports.
type ingestResult struct {
	Visits        int64   `json:"visits"`
	Edges         int64   `json:"edges"` // links recorded, nofollow ones included
	Domains       uint32  `json:"domains"`
	RecordSeconds float64 `json:"record_seconds"` // time recording (making the visits left out)
	Batches       int     `json:"batches"`
}

// runIngest fills a fresh store from the size's generated graph in a
// measured child.
func runIngest(ctx context.Context, e *env) ([]result, error) {
	dir := storeDir(e)
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	var res ingestResult
	m, err := runChild(&res, "ingest", e.size, dir, strconv.Itoa(ingestBatch), strconv.Itoa(e.shards))
	if err != nil {
		return nil, err
	}
	rows := []result{
		{"ingest", "store", fmt.Sprintf("%d shard(s); %d visits (one complete visit per source), %d links, %d domain records, batches of %d per shard from %d goroutines per shard",
			e.shards, res.Visits, res.Edges, res.Domains, ingestBatch, ingestCallers)},
		{"ingest", "edges/s (time recording)", fmt.Sprintf("%.0f (%s)", float64(res.Edges)/res.RecordSeconds, secs(res.RecordSeconds))},
		{"ingest", "wall (with making the visits)", secs(m.wall.Seconds())},
		{"ingest", "CPU (user+sys)", secs(m.cpu.Seconds())},
		{"ingest", "peak memory (max RSS)", fmt.Sprintf("%.0f MiB", float64(m.maxRSSKiB)/1024)},
	}
	return append(rows, stolenRow("ingest", m)...), nil
}

// childIngest records one complete visit per source domain of the
// generated graph (its out-links, one link word each) into a store of
// SHARDS shards: each shard's visits in batches of BATCH, from
// ingestCallers goroutines per shard, the shards at once, as a crawl's
// recorder would; it times the recording. Making the visits is left out
// of the timing: they are made ingestChunk batches at a time, then
// recorded.
func childIngest(args []string) (ingestResult, error) {
	var res ingestResult
	if len(args) != 4 {
		return res, fmt.Errorf("ingest: want SIZE STORE BATCH SHARDS")
	}
	batchSize, err := strconv.Atoi(args[2])
	if err != nil || batchSize < 1 {
		return res, fmt.Errorf("ingest: bad batch size %q", args[2])
	}
	shards, err := strconv.Atoi(args[3])
	if err != nil || shards < 1 {
		return res, fmt.Errorf("ingest: bad shard count %q", args[3])
	}
	cfg, err := graphgen.Size(args[0])
	if err != nil {
		return res, err
	}
	g, err := graphgen.New(cfg)
	if err != nil {
		return res, err
	}
	s, err := shard.Open(args[1], shard.Options{Create: true, Shards: shards})
	if err != nil {
		return res, err
	}
	var recording time.Duration
	// Each shard's visits are batched apart, as the recorder's queue per
	// shard does.
	batch := make([][]*data.VisitResult, shards)
	var chunk [][]*data.VisitResult
	var chunkShard []int
	record := func() error {
		start := time.Now()
		err := recordAll(s, chunk, chunkShard, ingestCallers)
		recording += time.Since(start)
		res.Batches += len(chunk)
		chunk, chunkShard = chunk[:0], chunkShard[:0]
		return err
	}
	var cur *data.VisitResult
	lastSrc := ^uint32(0)
	var name []byte
	err = g.Edges(func(src, dst uint32, nofollow bool) error {
		if src != lastSrc {
			lastSrc = src
			at := ingestAt.Add(time.Duration(res.Visits) * time.Millisecond)
			cur = &data.VisitResult{Domain: g.Name(src), StartedAt: at, FinishedAt: at.Add(time.Minute), RobotsReadAt: at,
				RobotsStatus: 200, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 8, Complete: true}
			i := s.ShardOf(cur.Domain)
			if len(batch[i]) == batchSize {
				chunk, chunkShard = append(chunk, batch[i]), append(chunkShard, i)
				batch[i] = make([]*data.VisitResult, 0, batchSize)
				if len(chunk) == ingestChunk {
					if err := record(); err != nil {
						return err
					}
				}
			}
			batch[i] = append(batch[i], cur)
			res.Visits++
		}
		name = g.AppendName(name[:0], dst)
		cur.Links = append(cur.Links, data.Link{Dst: string(name), Nofollow: nofollow, Words: linkWords[dst%uint32(len(linkWords)):][:1]})
		res.Edges++
		return nil
	})
	if err == nil {
		for i, b := range batch {
			if len(b) > 0 {
				chunk, chunkShard = append(chunk, b), append(chunkShard, i)
			}
		}
		err = record()
	}
	if err != nil {
		s.Close()
		return res, err
	}
	sn, err := s.Snapshot()
	if err == nil {
		for i := range sn.Shards() {
			res.Domains += sn.Shard(i).NumDomains()
		}
		sn.Close()
	}
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	res.RecordSeconds = recording.Seconds()
	return res, err
}

// recordAll records the batches, batch k in shard shardOf[k]: each shard
// from callers goroutines of its own, the shards at once.
func recordAll(s *shard.Store, batches [][]*data.VisitResult, shardOf []int, callers int) error {
	work := make([]chan []*data.VisitResult, s.Shards())
	errs := make(chan error, s.Shards()*callers)
	for i := range work {
		work[i] = make(chan []*data.VisitResult)
		for range callers {
			go func() {
				var first error
				for vs := range work[i] {
					if first == nil {
						first = recordSplitting(s, i, vs)
					}
				}
				errs <- first
			}()
		}
	}
	// Fed from one goroutine per shard, so that a shard's slow commit
	// does not hold the others' batches back.
	var feed sync.WaitGroup
	for i := range work {
		feed.Go(func() {
			for k, vs := range batches {
				if shardOf[k] == i {
					work[i] <- vs
				}
			}
			close(work[i])
		})
	}
	feed.Wait()
	var first error
	for range s.Shards() * callers {
		if err := <-errs; first == nil {
			first = err
		}
	}
	return first
}

// recordSplitting records vs in shard i, in halves when the store finds
// the batch too large for one transaction (a batch holding one of the
// graph's largest sources).
func recordSplitting(s *shard.Store, i int, vs []*data.VisitResult) error {
	err := s.RecordShard(i, vs)
	if err == nil || len(vs) < 2 || !errors.Is(err, badger.ErrTxnTooBig) {
		return err
	}
	if err := recordSplitting(s, i, vs[:len(vs)/2]); err != nil {
		return err
	}
	return recordSplitting(s, i, vs[len(vs)/2:])
}
