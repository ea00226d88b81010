package graph

import (
	"errors"
	"sync"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
)

// A batch of visits is prepared by one goroutine (the writer), but most of
// the work per visit does not need the batch: reading and decoding the
// visited domain's record, looking link targets up in the name cache,
// normalising the others. Helper goroutines do that for the visits ahead
// of the writer, on the other cores (BenchmarkRecordVisits: without them
// the writer does it all, on one core, and ingest is about half as fast).
//
// It is safe because the writer mutex is held throughout: the helpers
// read the same view of the store as the writer (transactions opened at
// one moment), and nothing writes the name cache until they have finished
// (the batch keeps its finds in batch.found and adds them after the
// commit). What the batch committing ahead changed is newer than that
// view: the writer takes it from that batch (batch.over), not from the
// helpers.

// prefetched is the helper's work for one visit.
type prefetched struct {
	src   uint32
	known bool    // src was in the name cache
	rec   *record // src's committed record; nil if not read
	err   error
	dst   []target // one per link, when the visit's links count
}

// target is a link's destination as far as the helper could resolve it.
type target struct {
	id   uint32
	hit  bool   // id is from the name cache
	name string // otherwise the normalised name; "" when invalid
}

// prefetchWorkers is how many helpers read ahead: two keep the writer fed
// on a 2-core machine, where one helper alone was the bottleneck. 0 does
// the work inline (benchmarks compare).
var prefetchWorkers = 2

// prefetch starts the helpers over vs: helper w takes the visits i with
// i % prefetchWorkers == w, in order. next(i) is visit i's work, to be
// taken once per visit in order; stop ends the helpers and waits for them.
func (s *Store) prefetch(v view, vs []*data.VisitResult) (next func(i int) *prefetched, stop func()) {
	workers := min(prefetchWorkers, len(vs)/8, len(v)-1)
	if workers <= 0 {
		// Too few visits to be worth a goroutine: the writer does it.
		return func(i int) *prefetched {
			p := new(prefetched)
			s.prefetchOne(p, v[0], vs[i], nil)
			return p
		}, func() {}
	}
	// One array for the batch's work and one block of link targets per
	// helper, rather than two allocations per visit.
	ps := make([]prefetched, len(vs))
	outs := make([]chan *prefetched, workers)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for w := range outs {
		out := make(chan *prefetched, 32)
		outs[w] = out
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(out)
			txn := v[1+w]
			var dsts []target
			for i := w; i < len(vs); i += workers {
				p := &ps[i]
				dsts = s.prefetchOne(p, txn, vs[i], dsts)
				select {
				case out <- p:
				case <-quit:
					return
				}
			}
		}()
	}
	var once sync.Once
	return func(i int) *prefetched { return <-outs[i%workers] }, func() {
		once.Do(func() {
			close(quit)
			wg.Wait()
		})
	}
}

// prefetchOne does the work for v into p, taking p.dst from the block
// dsts, which it returns (grown when it was too short).
func (s *Store) prefetchOne(p *prefetched, txn *badger.Txn, v *data.VisitResult, dsts []target) []target {
	pages := readsPages(v)
	if id, ok := s.names.get(v.Domain); ok {
		p.src, p.known = id, true
		p.rec, p.err = s.readRecord(txn, id, pages, !replaces(v))
	}
	if pages {
		if cap(dsts)-len(dsts) < len(v.Links) {
			dsts = make([]target, 0, max(1024, len(v.Links)))
		}
		p.dst = dsts[len(dsts) : len(dsts)+len(v.Links) : len(dsts)+len(v.Links)]
		dsts = dsts[:len(dsts)+len(v.Links)]
		for j := range v.Links {
			dst := v.Links[j].Dst
			if id, ok := s.names.get(dst); ok {
				p.dst[j] = target{id: id, hit: true}
			} else if name, err := domain.Normalize(dst); err == nil {
				p.dst[j].name = name
			}
		}
	}
	return dsts
}

// readRecord reads and decodes a domain's d/<id> record, from the record
// cache or else through txn, its edges too when edges is set (their words
// only if words is set). It returns nil, nil when there is none.
func (s *Store) readRecord(txn *badger.Txn, id uint32, edges, words bool) (*record, error) {
	if v := s.rcache.get(id); v != nil {
		return decodeRecord(id, v, edges, words)
	}
	item, err := txn.Get(idKey(prefixDomain, id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r *record
	err = item.Value(func(v []byte) error {
		r, err = decodeRecord(id, v, edges, words)
		return err
	})
	return r, err
}

// decodeRecord decodes a d/<id> value, which it does not keep.
func decodeRecord(id uint32, v []byte, edges, words bool) (*record, error) {
	r := new(record)
	tail, err := decodeDomain(id, v, &r.st)
	if err != nil {
		return nil, err
	}
	switch {
	case len(tail) == 0:
		r.decoded = true
	case edges:
		if r.edges, err = decodeAdjWords(id, tail, nil, words); err != nil {
			return nil, err
		}
		r.decoded = true
	default:
		r.raw = append([]byte(nil), tail...)
	}
	return r, nil
}
