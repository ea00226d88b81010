package crawl

import (
	"errors"
	"log/slog"
	"sync"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
)

// recorder writes finished visits to the store, several per transaction
// when they arrive faster than they are written (a store write per visit
// would cap a fast crawl), from recordWriters goroutines: the store
// prepares one batch while the other commits (graph/pipeline.go). A visit
// the store refuses because its domain was removed meanwhile is dropped;
// the others are written again without it.
type recorder struct {
	store Store
	log   *slog.Logger
	in    chan *data.VisitResult
	wg    sync.WaitGroup
	once  sync.Once
	mu    sync.Mutex
	err   error
	// onCommit, when set (before the first add), is told each batch the
	// store has committed, from one of the recorder's goroutines.
	onCommit func([]*data.VisitResult)
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
	r := &recorder{store: s, log: log, in: make(chan *data.VisitResult, recordBatch), failed: make(chan struct{})}
	for range recordWriters {
		r.wg.Add(1)
		go r.loop()
	}
	return r
}

func (r *recorder) add(v *data.VisitResult) { r.in <- v }

func (r *recorder) loop() {
	defer r.wg.Done()
	for v := range r.in {
		batch := []*data.VisitResult{v}
		links := len(v.Links)
	more:
		for len(batch) < recordBatch && links < recordLinks {
			select {
			case w, ok := <-r.in:
				if !ok {
					break more
				}
				batch = append(batch, w)
				links += len(w.Links)
			default:
				break more
			}
		}
		r.write(batch)
	}
}

func (r *recorder) write(batch []*data.VisitResult) {
	for len(batch) > 0 {
		err := r.store.RecordVisits(batch)
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
			r.write(batch[:len(batch)/2])
			batch = batch[len(batch)/2:]
			continue
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
		close(r.in)
		r.wg.Wait()
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}
