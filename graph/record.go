package graph

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
)

// VisitError says which visit of a RecordVisits batch was refused, for a
// fault of that visit: its domain is removed (errors.Is(err, ErrRemoved)),
// not a normalised registrable domain (*domain.Error), its outcome unknown,
// or its stored record damaged. The batch wrote nothing; the caller may drop
// that visit and record the rest. Errors of the store itself (a batch too
// large for one transaction, a full disk) are returned as they are.
type VisitError struct {
	Index  int // in the batch
	Domain string
	Err    error
}

func (e *VisitError) Error() string {
	return fmt.Sprintf("graph: visit %d (%q): %v", e.Index, e.Domain, e.Err)
}

func (e *VisitError) Unwrap() error { return e.Err }

// RecordVisit writes one visit, all or nothing.
func (s *Store) RecordVisit(v *data.VisitResult) error {
	return s.RecordVisits([]*data.VisitResult{v})
}

// RecordVisits writes several visits in one transaction, all or nothing,
// and returns once it is committed. Visits are applied in order, so two
// visits of one domain in a batch end in the state of the later one. Calls
// from several goroutines are pipelined (pipeline.go): two callers record
// faster than one.
//
// The rules (DESIGN.md, "Behaviour a site owner can see"):
//   - links: each Dst is normalised; invalid ones, links within the visited
//     domain and links to removed domains are dropped; duplicates merge
//     (nofollow only if all were, sitewide if any was, words united up to
//     data.MaxWordsPerLink); unknown targets become never-visited domains;
//     a followed link marks its target FollowedIn.
//   - edges: a complete ok or moved visit replaces the domain's out-edges
//     (first_seen kept for edges that persist); a partial one (or one not
//     Complete, or throttled or blocked after the home page) adds to them;
//     visits that read no page leave them alone, except that opted out, a
//     410 home page or 90 days of the same DNS or connection failure
//     drop them (dropsEdges).
//   - state: last visit, status and outcome; HTTPS, IPv6, ASN, network
//     operator when known; OptedOut when robots.txt was read; consecutive
//     failures, since when, and the server's Retry-After. These are facts:
//     when the domain is due again is the revisit policy's to compute
//     (schedule.RetryAt), not the store's.
//   - one visit-log entry per visit.
func (s *Store) RecordVisits(vs []*data.VisitResult) error {
	for i, v := range vs {
		if err := validateVisit(v); err != nil {
			name := ""
			if v != nil {
				name = v.Domain
			}
			return &VisitError{Index: i, Domain: name, Err: err}
		}
	}
	return s.pipeline(vs)
}

// prepare applies vs to a new batch reading through v, over the batch
// still committing ahead of it, if any; the batch is then ready to commit.
// s.mu is held.
func (s *Store) prepare(vs []*data.VisitResult, v view, over *batch) (*batch, error) {
	b := s.newBatch(v, over)
	// About three keys a visit, four with a new link target: allocated
	// once rather than grown.
	b.writes = make([]write, 0, 4*len(vs))
	next, stop := s.prefetch(v, vs)
	defer stop()
	for i, visit := range vs {
		if err := b.record(visit, next(i)); err != nil {
			if visitsFault(err) {
				return nil, &VisitError{Index: i, Domain: visit.Domain, Err: err}
			}
			return nil, err // the store's trouble: not this visit's
		}
	}
	b.flush()
	return b, nil
}

// visitsFault reports whether an error recording a visit is down to that
// visit (a removed or invalid domain, a damaged record of it), so that the
// caller may drop it and record the rest; other errors concern the batch.
func visitsFault(err error) bool {
	var de *domain.Error
	return errors.Is(err, ErrRemoved) || errors.Is(err, errCorrupt) || errors.As(err, &de)
}

func validateVisit(v *data.VisitResult) error {
	if v == nil {
		return errors.New("nil visit")
	}
	if v.Domain == "" {
		return &domain.Error{Reason: domain.ErrEmptyHost}
	}
	if !v.Outcome.Valid() {
		return fmt.Errorf("unknown outcome %q", v.Outcome)
	}
	if v.StartedAt.IsZero() {
		return errors.New("no start time")
	}
	return nil
}

// replaces reports whether the visit's links replace the domain's edges.
func replaces(v *data.VisitResult) bool {
	return v.Complete && (v.Outcome == data.OutcomeOK || v.Outcome == data.OutcomeMoved)
}

// readsPages reports whether a visit read pages, so that its links count:
// ok, moved and partial visits, and a visit throttled or blocked after its
// home page was read (a failure whose links are added as a partial's are).
func readsPages(v *data.VisitResult) bool {
	switch v.Outcome {
	case data.OutcomeOK, data.OutcomeMoved, data.OutcomePartial:
		return true
	case data.OutcomeThrottled, data.OutcomeBotProtection:
		return len(v.Links) > 0
	}
	return false
}

// record applies one visit; p is the prefetch helper's work for it.
func (b *batch) record(v *data.VisitResult, p *prefetched) error {
	if _, gone := b.s.removed[v.Domain]; gone {
		return ErrRemoved
	}
	// A known name was normalised when it was stored: only a new one
	// needs checking (and the check is most of a visit's CPU otherwise).
	src, known := p.src, p.known
	var err error
	if known {
		if _, ok := b.recs[src]; !ok {
			if r := b.overRec(src); r != nil {
				// The batch ahead changed it: the helper read an
				// older version.
				b.recs[src] = r
			} else if p.err != nil {
				return p.err
			} else if p.rec != nil {
				// Committed and untouched since: the helper's copy
				// is current.
				b.recs[src] = p.rec
			}
		}
	} else if src, known, err = b.lookup(v.Domain); err != nil {
		return err
	}
	if !known {
		if err := domain.Check(v.Domain); err != nil {
			return err
		}
		if src, _, err = b.lookupOrCreate(v.Domain, v.StartedAt); err != nil {
			return err
		}
	}
	st, err := b.state(src)
	if err != nil {
		return err
	}
	applyVisit(st, v)
	b.dirty[src] = struct{}{}

	if readsPages(v) {
		links, err := b.links(src, v, p.dst)
		if err != nil {
			return err
		}
		for i := range links {
			if !links[i].nofollow {
				b.markFollowed(links[i].dst)
			}
		}
		old, err := b.edges(src)
		if err != nil {
			return err
		}
		t := timeNanos(v.StartedAt)
		if replaces(v) {
			b.setEdges(src, replaceEdges(old, links, t))
		} else {
			b.setEdges(src, addEdges(old, links, t))
		}
	}
	if dropsEdges(st, v) {
		b.setEdges(src, nil)
	}
	b.valBuf = encodeVisit(b.valBuf, v)
	b.set(b.slab.copy(visitKey(src, v.StartedAt)), b.slab.copy(b.valBuf))
	return nil
}

// applyVisit updates a domain's state with what a visit learnt.
func applyVisit(st *data.DomainState, v *data.VisitResult) {
	prev := st.LastOutcome
	st.LastVisit = v.StartedAt
	st.LastStatus = v.HTTPStatus
	st.LastOutcome = v.Outcome
	if v.HTTPS != nil {
		b := *v.HTTPS
		st.HTTPS = &b
	}
	if v.IPv6 != nil {
		b := *v.IPv6
		st.IPv6 = &b
	}
	if v.ASN != 0 {
		st.ASN = v.ASN
	}
	if v.NetworkOperator != "" {
		st.NetworkOperator = v.NetworkOperator
	}
	switch {
	case v.Outcome == data.OutcomeOptedOut:
		st.OptedOut = true
	case v.RobotsStatus != 0:
		st.OptedOut = v.OptedOut
	}
	if v.Outcome.IsFailure() {
		if prev == v.Outcome {
			st.Failures++
			if st.FailingSince.IsZero() {
				st.FailingSince = v.StartedAt // a record from before the field: count from now
			}
		} else {
			st.Failures = 1
			st.FailingSince = v.StartedAt
		}
		st.RetryAfter = v.RetryAfter
	} else {
		st.Failures = 0
		st.RetryAfter = 0
		st.FailingSince = time.Time{}
	}
	st.RetryAt = time.Time{} // a format 2 store's retry time: this visit supersedes it
}

// GoneAfter is how long the same DNS or connection failure must last
// before the domain counts as gone and its out-links are dropped
// (DESIGN.md, "Responses").
const GoneAfter = 90 * 24 * time.Hour

// dropsEdges reports whether the visit (applied to st) ends the domain's
// out-links: robots.txt shuts us out (what we read from the site before is
// dropped with its link words, as the site owner asked), the home page
// answers 410 Gone, or the same DNS or connection failure has lasted
// GoneAfter. Links of others to the domain stay: it stays ranked by them.
func dropsEdges(st *data.DomainState, v *data.VisitResult) bool {
	switch v.Outcome {
	case data.OutcomeOptedOut:
		return true
	case data.OutcomeGone:
		return v.HTTPStatus == 410
	case data.OutcomeDNSError, data.OutcomeConnectError:
		return !st.FailingSince.IsZero() && v.StartedAt.Sub(st.FailingSince) >= GoneAfter
	}
	return false
}

// links turns a visit's links into edges sorted by dst, one per target,
// with first and last seen unset.
func (b *batch) links(src uint32, v *data.VisitResult, dsts []target) ([]edge, error) {
	// Sorted as (dst, link index) pairs packed in a uint64, not as edges:
	// moving 48-byte edges was most of a sort's cost. The index keeps equal
	// targets in the order seen, so merged words keep that order.
	keys := b.sortBuf[:0]
	for i := range v.Links {
		dst, ok, err := b.target(dsts[i], v)
		if err != nil {
			return nil, err
		}
		if ok && dst != src {
			keys = append(keys, uint64(dst)<<32|uint64(i))
		}
	}
	b.sortBuf = keys
	slices.Sort(keys)
	out := make([]edge, 0, len(keys))
	for _, k := range keys {
		dst, l := uint32(k>>32), &v.Links[uint32(k)]
		if n := len(out); n > 0 && out[n-1].dst == dst {
			m := &out[n-1]
			m.nofollow = m.nofollow && l.Nofollow
			m.sitewide = m.sitewide || l.Sitewide
			m.words = unionWords(m.words, l.Words)
			continue
		}
		out = append(out, edge{dst: dst, nofollow: l.Nofollow, sitewide: l.Sitewide, words: unionWords(nil, l.Words)})
	}
	return out, nil
}

// target resolves a link's destination to a domain id, creating the
// domain when unknown. ok is false for a link to drop: not a registrable
// domain, or removed. The helper looked the raw name up in the cache
// (a name found there is already normalised, which spares domain.Normalize for
// most links) and normalised the others.
func (b *batch) target(t target, v *data.VisitResult) (uint32, bool, error) {
	if t.hit {
		return t.id, true, nil
	}
	name := t.name
	if name == "" || name == v.Domain {
		return 0, false, nil
	}
	if _, gone := b.s.removed[name]; gone {
		return 0, false, nil
	}
	id, _, err := b.lookupOrCreate(name, v.StartedAt)
	return id, err == nil, err
}

// unionWords appends the words of add missing from have, skipping empty
// ones, up to data.MaxWordsPerLink. It never changes have's backing array
// in place when have came from the caller's link (it copies first).
func unionWords(have, add []string) []string {
	if have == nil && cleanWords(add) {
		return add // shared, never written to: encoding only reads it
	}
	out := have
	copied := false
	for _, w := range add {
		if len(out) >= data.MaxWordsPerLink {
			break
		}
		if w == "" || slices.Contains(out, w) {
			continue
		}
		if !copied {
			out = append(make([]string, 0, min(len(out)+len(add), data.MaxWordsPerLink)), out...)
			copied = true
		}
		out = append(out, w)
	}
	return out
}

// cleanWords reports whether ws has no empty or repeated word and fits.
func cleanWords(ws []string) bool {
	if len(ws) > data.MaxWordsPerLink {
		return false
	}
	for i, w := range ws {
		if w == "" || slices.Contains(ws[:i], w) {
			return false
		}
	}
	return true
}

// replaceEdges is a complete visit's edge set: links, keeping first_seen of
// the edges that were there before.
func replaceEdges(old, links []edge, t int64) []edge {
	out := make([]edge, len(links))
	j := 0
	for i, l := range links {
		for j < len(old) && old[j].dst < l.dst {
			j++
		}
		l.first, l.last = t, t
		if j < len(old) && old[j].dst == l.dst {
			l.first = old[j].first
		}
		out[i] = l
	}
	return out
}

// addEdges merges a partial visit's links into the old set: an edge seen
// again keeps its first_seen, is nofollow only if it was and still is all
// nofollow, sitewide if it was or is, and unites its words.
func addEdges(old, links []edge, t int64) []edge {
	out := make([]edge, 0, len(old)+len(links))
	i, j := 0, 0
	for i < len(old) || j < len(links) {
		switch {
		case j == len(links) || (i < len(old) && old[i].dst < links[j].dst):
			out = append(out, old[i])
			i++
		case i == len(old) || links[j].dst < old[i].dst:
			l := links[j]
			l.first, l.last = t, t
			out = append(out, l)
			j++
		default:
			o, l := old[i], links[j]
			o.last = t
			o.nofollow = o.nofollow && l.nofollow
			o.sitewide = o.sitewide || l.sitewide
			o.words = unionWords(o.words, l.words)
			out = append(out, o)
			i++
			j++
		}
	}
	return out
}
