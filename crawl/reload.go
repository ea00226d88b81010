package crawl

import (
	"sync"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/snapshot"
)

// A running crawl follows the newest schedule without a restart: when a
// visit ends and IdleRecheck (a minute) has passed since it last looked, it
// checks where rebuilds/current points and reads the schedule again when
// that changed (a rebuild, most likely one run inside this process on
// request, moved it); when it has nothing to do it reads the schedule
// again every IdleRecheck (more rows fall due as time passes).
//
// A domain is visited once per schedule. When a new schedule lists a
// domain this run has visited already, the row is trusted only if that
// visit was committed before the snapshot was taken (so the snapshot saw
// it and the row's next_visit accounts for it); otherwise the row predates
// the visit and is skipped until a later schedule.

// commitMargin absorbs the rounding of the snapshot's start estimate.
const commitMargin = 10 * time.Millisecond

// commitLog records when each visit of this run was committed; the
// recorder's goroutine writes it, the loop reads it.
type commitLog struct {
	clock interface{ Now() time.Time }
	mu    sync.Mutex
	at    map[string]time.Time
}

func newCommitLog(clock interface{ Now() time.Time }) *commitLog {
	return &commitLog{clock: clock, at: map[string]time.Time{}}
}

func (c *commitLog) note(batch []*data.VisitResult) {
	now := c.clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, v := range batch {
		c.at[v.Domain] = now
	}
}

// before reports whether domain's visit was committed before t, and
// forgets it when so (the next visit writes it again).
func (c *commitLog) before(domain string, t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[domain]
	if ok && at.Before(t) {
		delete(c.at, domain)
		return true
	}
	return false
}

// scheduleTarget is the id of the snapshot rebuilds/current names (""
// when none).
func scheduleTarget(dataDir string) string {
	s, _ := currentSnapshot(dataDir)
	return s.ID
}

// asOfNow is the as-of time for what is due now: --now moved on by the
// time the crawl has run (so a replay stays a replay).
func (l *loop) asOfNow() time.Time {
	return l.asOf.Add(l.o.Clock.Since(l.start))
}

// loadSchedule reads the due rows of the current schedule not yet taken in
// this run, the MaxDue first of them; dueMore says whether there were more
// (next reads the schedule again for them when these are taken).
func (l *loop) loadSchedule(asOf time.Time) error {
	if l.o.DataDir == "" {
		return nil
	}
	cur, ok := currentSnapshot(l.o.DataDir)
	target := cur.ID
	reopen := l.reopener(target)
	skip := func(domain string) bool {
		if !l.started[domain] {
			return false
		}
		if reopen != nil && reopen(domain) {
			delete(l.started, domain)
			return false
		}
		return true
	}
	var due []data.ScheduleRow
	var total int
	if ok {
		var err error
		if due, total, err = ReadDueTop(cur, asOf, l.o.MaxDue, skip); err != nil {
			return err
		}
	}
	l.schedule = target
	l.due = due
	l.dueMore = total > len(due)
	l.o.Metrics.scheduleLoaded()
	return nil
}

// recheck reads the schedule again when rebuilds/current moved, or
// always when idle.
func (l *loop) recheck(idle bool) {
	l.checked = l.o.Clock.Now()
	if l.o.DataDir == "" || (!idle && scheduleTarget(l.o.DataDir) == l.schedule) {
		return
	}
	before := l.schedule
	if err := l.loadSchedule(l.asOfNow()); err != nil {
		l.o.Logger.Warn("schedule", "err", err)
		return
	}
	if l.schedule != before {
		l.o.Logger.Info("new schedule", "snapshot", l.schedule, "due", len(l.due))
	}
}

// reopener says, for a new schedule target, which domains visited in this
// run it may list again: those whose visit is in its snapshot. nil when
// the target is not new (or its snapshot time unknown): none.
func (l *loop) reopener(target string) func(domain string) bool {
	if target == l.schedule || target == "" {
		return nil
	}
	taken, ok := snapshotTaken(snapshot.Local(l.o.DataDir), target)
	if !ok {
		return nil
	}
	cutoff := taken.Add(-commitMargin)
	return func(domain string) bool { return l.commits.before(domain, cutoff) }
}

// snapshotTaken estimates when the view of the store that snapshot id was
// made from was opened: the manifest's created_at less its stages'
// durations (the first stage starts just before the view opens, the last
// ends just after created_at, so the estimate errs early, which is the
// safe side).
func snapshotTaken(st snapshot.Storage, id string) (time.Time, bool) {
	m, err := snapshot.ReadManifest(st, id)
	if err != nil || m.CreatedAt.IsZero() {
		return time.Time{}, false
	}
	var d float64
	for _, s := range m.Stages {
		d += s.Seconds
	}
	return m.CreatedAt.Add(-time.Duration(d * float64(time.Second))), true
}
