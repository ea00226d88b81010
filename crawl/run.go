package crawl

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/mapthenet/mapthenet/crawl/webbotauth"
	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
)

// Store is what the crawl needs of the link store (*graph.Store). Its
// methods are called from several goroutines at once.
type Store interface {
	AddDomains(names []string, seen time.Time, seeded bool) error
	RecordVisits(vs []*data.VisitResult) error
	Domain(name string) (data.DomainState, bool, error)
	IsRemoved(name string) (bool, error)
}

// Stats counts what a crawl did.
type Stats struct {
	Visits     int                  // recorded
	Pages      int                  // pages read in recorded visits
	Bytes      int64                // decoded bytes read in recorded visits
	Outcomes   map[data.Outcome]int // recorded visits by outcome
	Abandoned  int                  // visits dropped because the crawl stopped
	Due        int                  // schedule rows due at the start
	Seeds      int                  // seed domains read
	Discovered int                  // new domains found by followed links and queued for this run
	Deferred   int                  // followed links to new domains left to the next schedule: the in-run queue was full
	Elapsed    time.Duration
}

// Run crawls until nothing is due (UntilIdle), MaxSites visits were
// started, MaxDuration has passed or ctx is cancelled: due domains from the
// current schedule first, then seeds, then domains found during the run
// (followed links only), most linking domains first, at most MaxFound of
// them held at once (found.go). Each finished visit is
// recorded in one write; a visit cut short by the stop is dropped whole.
func Run(ctx context.Context, store Store, opts Options) (Stats, error) {
	o := opts.withDefaults()
	stats := Stats{Outcomes: map[data.Outcome]int{}}
	if err := o.Tiers.Validate(); err != nil {
		return stats, fmt.Errorf("crawl: %w", err)
	}
	// Before a signing key is made: no identity, no crawl.
	if err := o.checkIdentity(); err != nil {
		return stats, err
	}
	if o.LogEvery > 0 {
		if o.Metrics == nil {
			o.Metrics = NewMetrics(prometheus.NewRegistry())
		}
		stopLog := startActivityLog(ctx, o)
		defer stopLog()
	}
	o.Metrics.Activity().setClock(o.Clock)
	start := o.Clock.Now()
	asOf := o.Now
	if asOf.IsZero() {
		asOf = start.UTC()
	}
	if o.Sign == nil && o.KeysDir != "" {
		sign, err := loadSigner(o)
		if err != nil {
			return stats, err
		}
		o.Sign = sign
	}
	if o.Sign == nil {
		return stats, errors.New("crawl: no request signer: every request must be signed (set KeysDir)")
	}
	c, err := NewCrawler(o)
	if err != nil {
		return stats, err
	}
	defer boundHeap(store, heapRecheck)()

	exclude := map[string]bool{}
	for _, f := range o.Exclude {
		ds, bad, err := ReadDomainList(f, domain.Normalize)
		if err != nil {
			return stats, fmt.Errorf("--exclude: %w", err)
		}
		for _, b := range bad {
			o.Logger.Warn("exclude entry skipped", "entry", b)
		}
		for _, d := range ds {
			exclude[d] = true
		}
	}
	var seeds []string
	for _, f := range o.Seeds {
		ds, bad, err := ReadDomainList(f, domain.Normalize)
		if err != nil {
			return stats, fmt.Errorf("--seeds: %w", err)
		}
		for _, b := range bad {
			o.Logger.Warn("seed skipped", "entry", b)
		}
		seeds = append(seeds, ds...)
	}
	stats.Seeds = len(seeds)
	if len(seeds) > 0 && o.Fleet == nil {
		// (A fleet node adds each shard's seeds as it takes the shard.)
		if err := store.AddDomains(seeds, asOf, true); err != nil {
			return stats, fmt.Errorf("crawl: adding seeds: %w", err)
		}
	}

	if o.MaxDuration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.MaxDuration)
		defer cancel()
	}

	l := &loop{c: c, o: o, store: store, stats: &stats, exclude: exclude,
		started: map[string]bool{}, found: newFoundSet(o.MaxFound),
		asOf: asOf, start: start, checked: start, commits: newCommitLog(o.Clock)}
	if err := l.loadSchedule(asOf); err != nil {
		return stats, err
	}
	stats.Due = len(l.due) // at most MaxDue
	l.seeds = seeds
	l.allSeeds = seeds
	err = l.run(ctx)
	stats.Elapsed = o.Clock.Since(start)
	if err == nil && o.UntilIdle && l.nStarted == 0 && ctx.Err() == nil {
		why := idleReason(o.DataDir, asOf, len(seeds))
		o.Logger.Warn("nothing to crawl", "why", why)
		if o.Progress != nil {
			fmt.Fprintln(o.Progress, "crawl: nothing to crawl: "+why)
		}
	}
	return stats, err
}

func loadSigner(o Options) (func(*http.Request) error, error) {
	kr, created, err := webbotauth.LoadOrCreate(o.KeysDir, o.Clock.Now())
	if err != nil {
		return nil, fmt.Errorf("crawl: signing key: %w", err)
	}
	if created {
		msg := fmt.Sprintf("created a signing key in %s: publish its key directory (mapthenet keys directory) at %s before crawling the real web",
			o.KeysDir, cmp.Or(o.SignatureAgentURL, webbotauth.DefaultAgentURL))
		o.Logger.Warn(msg)
		if o.Progress != nil {
			fmt.Fprintln(o.Progress, "crawl: "+msg)
		}
	}
	s, err := webbotauth.NewSigner(kr, webbotauth.SignerOptions{AgentURL: o.SignatureAgentURL, Form: o.SignatureAgentForm})
	if err != nil {
		return nil, fmt.Errorf("crawl: signing key: %w", err)
	}
	clock := o.Clock
	return func(r *http.Request) error { return s.Sign(r, clock.Now()) }, nil
}

type loop struct {
	c       *Crawler
	o       Options
	store   Store
	stats   *Stats
	exclude map[string]bool

	due     []data.ScheduleRow
	dueMore bool // the schedule has more due rows than due holds (MaxDue)
	seeds   []string
	// allSeeds are every seed of the run: a fleet node goes through them
	// again whenever its shards change.
	allSeeds []string
	stopping bool // the run is ending: visits in flight are abandoned
	// fenced are visits a shard's fence refused (the recorder's goroutines
	// add them): the loop forgets them at the next change of shards.
	fencedMu sync.Mutex
	fenced   []string
	// found counts, per domain found this run (up to MaxFound of them),
	// the distinct domains whose visits linked to it with a followed link.
	found    *foundSet
	started  map[string]bool // visited (or tried) in this run
	nStarted int

	// Following the schedule (reload.go).
	asOf, start time.Time  // as-of time and clock time at the start
	schedule    string     // where rebuilds/current pointed when read
	checked     time.Time  // clock time of the last look at it
	commits     *commitLog // when each visit of this run was committed
}

type job struct {
	domain string
	pages  int
}

type done struct {
	job job
	res *data.VisitResult
	err error
}

// next picks the next domain to visit, or false when nothing is due.
func (l *loop) next() (job, bool) {
	for len(l.due) > 0 || l.dueMore {
		if len(l.due) == 0 {
			// The first MaxDue were taken: the next ones.
			if err := l.loadSchedule(l.asOfNow()); err != nil {
				l.o.Logger.Warn("schedule", "err", err)
				l.dueMore = false
			}
			continue
		}
		r := l.due[0]
		l.due = l.due[1:]
		if !l.workable(r.Domain) {
			continue // another node's, or not ready: read again when the shards change
		}
		if l.ok(r.Domain, false) {
			return job{r.Domain, int(r.Pages)}, true
		}
		l.started[r.Domain] = true // not now (excluded, removed): not read again this run
	}
	for len(l.seeds) > 0 {
		d := l.seeds[0]
		l.seeds = l.seeds[1:]
		if !l.workable(d) {
			continue
		}
		if l.ok(d, true) {
			return job{d, 0}, true
		}
	}
	for {
		d, ok := l.found.pop(l.o.MinInDomains)
		if !ok {
			return job{}, false
		}
		if l.ok(d, true) {
			return job{d, 0}, true
		}
	}
}

// workable says whether this process may visit domain now: always on one
// machine; on a fleet node, when its shard is held and ready.
func (l *loop) workable(domain string) bool {
	return l.o.Fleet == nil || l.o.Fleet.ready(domain, l.o.Clock.Now())
}

// shardsChanged reads the schedule and the seeds again for a fleet node
// whose shards changed (taken, ready, given up).
func (l *loop) shardsChanged() {
	l.fencedMu.Lock()
	for _, d := range l.fenced {
		delete(l.started, d) // not recorded: visited again by whoever holds its shard
	}
	l.fenced = nil
	l.fencedMu.Unlock()
	if replaced := l.o.Fleet.takeReplaced(); replaced != nil {
		for d := range l.started {
			if replaced[l.o.Fleet.route(d)] {
				delete(l.started, d)
			}
		}
	}
	if err := l.loadSchedule(l.asOfNow()); err != nil {
		l.o.Logger.Warn("schedule", "err", err)
	}
	l.seeds = l.allSeeds
}

func (l *loop) noteFenced(batch []*data.VisitResult) {
	l.fencedMu.Lock()
	for _, v := range batch {
		l.fenced = append(l.fenced, v.Domain)
	}
	l.fencedMu.Unlock()
	if l.o.Fleet != nil {
		l.o.Fleet.Wake()
	}
}

// ok says whether domain may be visited now. onlyNew: only if it was never
// visited before (seeds and domains found this run).
func (l *loop) ok(domain string, onlyNew bool) bool {
	if l.started[domain] || l.exclude[domain] {
		return false
	}
	if removed, err := l.store.IsRemoved(domain); err != nil || removed {
		return false
	}
	if onlyNew {
		st, found, err := l.store.Domain(domain)
		if err != nil || (found && st.Visited()) {
			return false
		}
	}
	return true
}

func (l *loop) run(ctx context.Context) error {
	// A store that fails a write (a full disk, say) stops the crawl as a
	// cancel would: its visits could not be recorded.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make(chan done)
	rec := newRecorder(l.store, l.o.Logger)
	storeFailed := rec.failed
	rec.onCommit = l.commits.note
	rec.onFenced = l.noteFenced
	defer rec.close()
	// Nothing is in flight once run returns.
	defer func() { l.o.Metrics.queues(len(l.due), len(l.seeds)+l.found.Len(), 0) }()
	inflight := 0
	stopping := false
	var tick <-chan time.Time
	if l.o.Progress != nil {
		t := l.o.Clock.NewTicker(l.o.ProgressInterval)
		defer t.Stop()
		tick = t.Chan()
	}
	var idle <-chan time.Time
	idleLogged := false
	var fleetWake <-chan struct{}
	if l.o.Fleet != nil {
		fleetWake = l.o.Fleet.wake
	}
	for {
		for !stopping && inflight < l.o.SitesInFlight && (l.o.MaxSites <= 0 || l.nStarted < l.o.MaxSites) {
			j, ok := l.next()
			if !ok {
				break
			}
			vctx, end := ctx, func() {}
			if l.o.Fleet != nil {
				c, e, ok := l.o.Fleet.begin(ctx, j.domain)
				if !ok {
					continue
				}
				vctx, end = c, e
			}
			l.started[j.domain] = true
			l.nStarted++
			inflight++
			go func() {
				res, err := l.c.Visit(vctx, j.domain, j.pages)
				if l.o.Fleet != nil && err == nil {
					l.o.Fleet.visited(vctx, res, l.o.Logger)
				}
				end() // before the hand-over: Fleet.Close waits for it
				results <- done{j, res, err}
			}()
		}
		limitReached := l.o.MaxSites > 0 && l.nStarted >= l.o.MaxSites
		if inflight == 0 {
			if stopping || l.o.UntilIdle || limitReached {
				break
			}
			if idle == nil {
				// Nothing due: look again later (a rebuild may have written
				// a new schedule).
				idle = l.o.Clock.After(l.o.IdleRecheck)
				if !idleLogged {
					// Once per idle spell, so a log file says why the
					// crawl is quiet and until when.
					l.o.Logger.Info("crawl idle", "why", idleReason(l.o.DataDir, l.asOf.Add(l.o.Clock.Since(l.start)), len(l.seeds)),
						"recheck_every", l.o.IdleRecheck.String())
					idleLogged = true
				}
			}
		} else {
			idleLogged = false
		}
		l.o.Metrics.queues(len(l.due), len(l.seeds)+l.found.Len(), inflight)
		select {
		case d := <-results:
			inflight--
			l.finish(d, rec)
			if l.o.Clock.Since(l.checked) >= l.o.IdleRecheck {
				l.recheck(false) // busy: follow a new schedule
			}
		case <-storeFailed:
			storeFailed = nil
			l.o.Logger.Error("the store refuses writes: stopping the crawl")
			cancel()
		case <-ctx.Done():
			stopping = true
			l.stopping = true
			idle = nil
			if inflight == 0 {
				return rec.close()
			}
			// In-flight visits see the same ctx and return ErrAbandoned.
			for inflight > 0 {
				d := <-results
				inflight--
				l.finish(d, rec)
			}
			return rec.close()
		case <-idle:
			idle = nil
			l.recheck(true)
			if l.o.Fleet != nil {
				l.seeds = l.allSeeds
			}
		case <-fleetWake:
			idle = nil
			l.shardsChanged()
		case <-tick:
			l.progress(inflight)
		}
	}
	if l.o.Progress != nil {
		l.progress(0)
	}
	return rec.close()
}

func (l *loop) progress(inflight int) {
	s := l.stats
	fmt.Fprintf(l.o.Progress, "crawl: %d visits (%d ok), %d pages, %d in flight, %d due, %d found\n",
		s.Visits, s.Outcomes[data.OutcomeOK], s.Pages, inflight, len(l.due), l.found.Len())
}

func (l *loop) finish(d done, rec *recorder) {
	if d.err != nil {
		if errors.Is(d.err, ErrAbandoned) {
			if l.o.Fleet != nil && !l.stopping {
				// Its shard was given up or is not ready: whoever holds it
				// next (this node again, maybe) visits it.
				delete(l.started, d.job.domain)
			}
			l.stats.Abandoned++
			l.o.Metrics.visitEnded(true)
			return
		}
		l.o.Metrics.visitEnded(false)
		l.o.Logger.Error("visit", "domain", d.job.domain, "err", d.err)
		return
	}
	r := d.res
	rec.add(r)
	l.o.Metrics.visited(r)
	l.stats.Visits++
	l.stats.Pages += r.Pages
	l.stats.Bytes += r.Bytes
	l.stats.Outcomes[r.Outcome]++
	// The visit's log line ("visit recorded") comes from the recorder once
	// the store has committed it, so that the log never claims a visit a
	// crash then loses.
	for _, link := range r.Links {
		if l.o.Fleet != nil {
			// A fleet node visits what the schedule and the seeds list: a
			// domain found now is first visited after the next rebuild.
			break
		}
		if link.Nofollow || l.started[link.Dst] || l.exclude[link.Dst] {
			continue
		}
		switch isNew, kept := l.found.add(link.Dst); {
		case isNew && kept:
			l.stats.Discovered++
		case !kept:
			l.stats.Deferred++
		}
	}
}
