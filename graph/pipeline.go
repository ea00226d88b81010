package graph

import "github.com/mapthenet/mapthenet/data"

// RecordVisits calls from several goroutines are pipelined: while one
// batch commits (Badger inserting its keys into the memtable, on one
// core), the next is prepared (its records read, its links resolved, its
// values encoded) on the other. That is most of ingest's time, and the
// two halves take similar time (BenchmarkRecordVisits/pipelined).
//
// Preparation holds s.mu, so batches are prepared, committed and applied
// to the caches in one order, and at most one batch is in flight: a
// caller prepares its batch over the one committing (s.inflight), reading
// the store as it was before that batch and taking that batch's writes
// from it (batch.over), waits for that commit to end, and only then
// commits its own. If that commit failed, the batch is prepared again
// without it, so a failed transaction still leaves no trace.
//
// A Badger transaction opened while a commit is under way waits for it to
// end, so the view the next batch reads through is opened just before
// each commit (s.ahead), ready for whoever comes next.
//
// Other writers (AddDomains, RemoveDomain, the trim, Close) drain the
// pipeline first (lockWrite), and write with nothing in flight.

// pipeline records vs: prepare under s.mu over the batch in flight,
// commit, settle.
func (s *Store) pipeline(vs []*data.VisitResult) error {
	if err := s.lockOpen(); err != nil {
		return err
	}
	over := s.inflight
	v := s.ahead // opened before over's commit began
	s.ahead = nil
	if over == nil || v == nil {
		if v != nil {
			v.discard()
		}
		v = s.openView()
	}
	b, err := s.prepare(vs, v, over)
	if over != nil {
		<-over.done
		s.settle(over)
		if over.err != nil {
			// Prepared over writes that never landed: again, without.
			v.discard()
			v = s.openView()
			b, err = s.prepare(vs, v, nil)
		}
	}
	if err != nil {
		v.discard()
		s.mu.Unlock()
		return err
	}
	b.over = nil // committed now: nothing more to read from it
	b.done = make(chan struct{})
	s.inflight = b
	s.ahead = s.openView()
	v.discard()
	s.mu.Unlock()

	b.err = s.commit(b)
	close(b.done)

	s.mu.Lock()
	s.settle(b)
	s.mu.Unlock()
	return b.err
}

// settle applies a batch whose commit has ended to the caches, once, and
// takes it out of flight. s.mu is held.
func (s *Store) settle(b *batch) {
	if !b.settled {
		b.settled = true
		if b.err == nil {
			b.apply()
		}
	}
	if s.inflight == b {
		s.inflight = nil
		if s.ahead != nil {
			s.ahead.discard()
			s.ahead = nil
		}
	}
}

// drain waits for the batch in flight, if any, and settles it. s.mu is
// held; the commit does not need it.
func (s *Store) drain() {
	if b := s.inflight; b != nil {
		<-b.done
		s.settle(b)
	}
}
