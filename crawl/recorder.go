package crawl

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
)

// ShardedStore is a Store of several shards that commit independently
// (*shard.Store): the recorder batches each shard's visits apart, so that
// the shards commit in parallel, and a visit is logged as recorded once
// its own shard has committed it.
type ShardedStore interface {
	Store
	Shards() int
	ShardOf(domain string) int
	RecordShard(shard int, vs []*data.VisitResult) error
}

// recorder writes finished visits to the store, several per transaction
// when they arrive faster than they are written (a store write per visit
// would cap a fast crawl), from recordWriters goroutines per shard: a
// shard prepares one batch while the other commits (graph/pipeline.go),
// and the shards of a ShardedStore commit in parallel, each with its own
// queue. A visit the store refuses because its domain was removed
// meanwhile is dropped; the others are written again without it.
type recorder struct {
	log    *slog.Logger
	route  func(domain string) int                       // the shard of a visit
	record func(shard int, vs []*data.VisitResult) error // one shard's transaction
	in     []chan *data.VisitResult                      // a queue per shard
	wg     sync.WaitGroup
	once   sync.Once
	mu     sync.Mutex
	err    error
	// onCommit, when set (before the first add), is told each batch the
	// store has committed, from one of the recorder's goroutines.
	onCommit func([]*data.VisitResult)
	// onFenced, when set, is told each batch a shard's fence refused (a
	// fleet node that no longer holds the shard): not recorded.
	onFenced func([]*data.VisitResult)
	// failed is closed at the first store error (a full disk, say): the
	// crawl stops rather than visit sites it cannot record.
	failed     chan struct{}
	failedOnce sync.Once
}

const (
	recordBatch   = 256
	recordWriters = 2
	// recordLinks bounds the links of one batch: visits that each name
	// many new domains (up to MaxLinkDomains) make a transaction of
	// several keys per new domain, which Badger holds in memory until it
	// commits, and refuses past its size limit.
	recordLinks = 32 << 10
)

func newRecorder(s Store, log *slog.Logger) *recorder {
	r := &recorder{log: log, failed: make(chan struct{}),
		route:  func(string) int { return 0 },
		record: func(_ int, vs []*data.VisitResult) error { return s.RecordVisits(vs) }}
	shards := 1
	if ss, ok := s.(ShardedStore); ok && ss.Shards() > 1 {
		shards, r.route, r.record = ss.Shards(), ss.ShardOf, ss.RecordShard
	}
	r.in = make([]chan *data.VisitResult, shards)
	for i := range r.in {
		r.in[i] = make(chan *data.VisitResult, recordBatch)
		for range recordWriters {
			r.wg.Add(1)
			go r.loop(i)
		}
	}
	return r
}

func (r *recorder) add(v *data.VisitResult) { r.in[r.route(v.Domain)] <- v }

func (r *recorder) loop(shard int) {
	defer r.wg.Done()
	in := r.in[shard]
	for v := range in {
		batch := []*data.VisitResult{v}
		links := len(v.Links)
	more:
		for len(batch) < recordBatch && links < recordLinks {
			select {
			case w, ok := <-in:
				if !ok {
					break more
				}
				batch = append(batch, w)
				links += len(w.Links)
			default:
				break more
			}
		}
		r.write(shard, batch)
	}
}

func (r *recorder) write(shard int, batch []*data.VisitResult) {
	for len(batch) > 0 {
		err := r.record(shard, batch)
		if err == nil {
			if r.onCommit != nil {
				r.onCommit(batch)
			}
			// Logged only now, after the commit, so that a "visit
			// recorded" line in the log means the visit is in the store
			// (the crash test relies on it).
			for _, v := range batch {
				r.log.Info("visit recorded", "domain", v.Domain, "outcome", string(v.Outcome), "pages", v.Pages,
					"ms", v.FinishedAt.Sub(v.StartedAt).Milliseconds())
			}
			return
		}
		if errors.Is(err, graph.ErrBatchTooLarge) && len(batch) > 1 {
			// Visits that name many new domains each (up to
			// MaxLinkDomains) overflow one transaction: halves, until
			// they fit.
			r.write(shard, batch[:len(batch)/2])
			batch = batch[len(batch)/2:]
			continue
		}
		if errors.Is(err, graph.ErrFenced) {
			// The shard's fence refused: this process no longer holds the
			// shard (a fleet node that lost it). Its visits are not
			// recorded, and the crawl goes on with the other shards.
			r.log.Error("visits not recorded: the shard is no longer ours", "shard", shard, "visits", len(batch), "err", err)
			if r.onFenced != nil {
				r.onFenced(batch)
			}
			return
		}
		var ve *graph.VisitError
		if errors.As(err, &ve) && ve.Index >= 0 && ve.Index < len(batch) {
			if errors.Is(err, graph.ErrRemoved) {
				r.log.Info("visit dropped: domain removed", "domain", ve.Domain)
			} else {
				r.log.Error("visit not recorded", "domain", ve.Domain, "err", ve.Err)
			}
			batch = append(batch[:ve.Index:ve.Index], batch[ve.Index+1:]...)
			continue
		}
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
		r.failedOnce.Do(func() { close(r.failed) })
		r.log.Error("recording visits", "visits", len(batch), "err", err)
		return
	}
}

// close waits for every visit handed over to be written and returns the
// first store error.
func (r *recorder) close() error {
	r.once.Do(func() {
		for _, in := range r.in {
			close(in)
		}
		r.wg.Wait()
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
