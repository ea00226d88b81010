package graph

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
	"github.com/mapthenet/mapthenet/schedule"
)

var (
	t1 = t0.Add(24 * time.Hour)
	t2 = t0.Add(48 * time.Hour)
)

// wantEdge is an edge as the edge tests expect it.
type wantEdge struct {
	first, last time.Time
	nofollow    bool
	sitewide    bool
	words       []string
}

func nofollow(dst string) data.Link { return data.Link{Dst: dst, Nofollow: true} }

func sitewide(dst string) data.Link { return data.Link{Dst: dst, Sitewide: true} }

func withStatus(v *data.VisitResult, status int) *data.VisitResult {
	v.HTTPStatus = status
	return v
}

func partial(name string, at time.Time, links ...data.Link) *data.VisitResult {
	v := visit(name, at, data.OutcomePartial, links...)
	v.Complete = false
	return v
}

func TestRecordEdges(t *testing.T) {
	many := make([]string, 20)
	for i := range many {
		many[i] = fmt.Sprintf("w%02d", i)
	}
	tests := []struct {
		name  string
		prior []*data.VisitResult // recorded first, in order
		v     *data.VisitResult
		want  map[string]wantEdge // a.example's out-edges after v
	}{{
		name:  "complete visit replaces the edge set, keeping first_seen",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"), link("c.example"))},
		v:     visit("a.example", t1, data.OutcomeOK, link("c.example"), link("d.example")),
		want: map[string]wantEdge{
			"c.example": {first: t0, last: t1},
			"d.example": {first: t1, last: t1},
		},
	}, {
		name:  "partial visit adds to the edge set",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"), link("c.example"))},
		v:     partial("a.example", t1, link("c.example"), link("d.example")),
		want: map[string]wantEdge{
			"b.example": {first: t0, last: t0},
			"c.example": {first: t0, last: t1},
			"d.example": {first: t1, last: t1},
		},
	}, {
		name:  "ok visit not marked complete adds",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v: func() *data.VisitResult {
			v := visit("a.example", t1, data.OutcomeOK, link("c.example"))
			v.Complete = false
			return v
		}(),
		want: map[string]wantEdge{
			"b.example": {first: t0, last: t0},
			"c.example": {first: t1, last: t1},
		},
	}, {
		name:  "moved replaces with the redirect target",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v:     visit("a.example", t1, data.OutcomeMoved, link("new-home.example")),
		want:  map[string]wantEdge{"new-home.example": {first: t1, last: t1}},
	}, {
		name:  "complete visit with no links empties the set",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v:     visit("a.example", t1, data.OutcomeOK),
		want:  map[string]wantEdge{},
	}, {
		name:  "failure leaves edges untouched",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v:     visit("a.example", t1, data.OutcomeTimeout, link("c.example")),
		want:  map[string]wantEdge{"b.example": {first: t0, last: t0}},
	}, {
		name:  "opted out drops the out-links and their words read before",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example", "cats"))},
		v:     visit("a.example", t1, data.OutcomeOptedOut, link("c.example")),
		want:  map[string]wantEdge{},
	}, {
		name:  "a 410 home page drops the out-links",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v:     withStatus(visit("a.example", t1, data.OutcomeGone), 410),
		want:  map[string]wantEdge{},
	}, {
		name:  "a 404 home page leaves them",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v:     withStatus(visit("a.example", t1, data.OutcomeGone), 404),
		want:  map[string]wantEdge{"b.example": {first: t0, last: t0}},
	}, {
		name: "the same DNS failure for 90 days drops the out-links",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example")),
			visit("a.example", t1, data.OutcomeDNSError), visit("a.example", t1.Add(60*24*time.Hour), data.OutcomeDNSError)},
		v:    visit("a.example", t1.Add(GoneAfter), data.OutcomeDNSError),
		want: map[string]wantEdge{},
	}, {
		name: "89 days of connection failures leave them",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example")),
			visit("a.example", t1, data.OutcomeConnectError)},
		v:    visit("a.example", t1.Add(GoneAfter-24*time.Hour), data.OutcomeConnectError),
		want: map[string]wantEdge{"b.example": {first: t0, last: t0}},
	}, {
		name: "90 days of changing failures leave them",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example")),
			visit("a.example", t1, data.OutcomeConnectError), visit("a.example", t1.Add(30*24*time.Hour), data.OutcomeDNSError)},
		v:    visit("a.example", t1.Add(GoneAfter), data.OutcomeConnectError),
		want: map[string]wantEdge{"b.example": {first: t0, last: t0}},
	}, {
		name:  "throttled after the home page adds the links read",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v:     visit("a.example", t1, data.OutcomeThrottled, link("c.example")),
		want:  map[string]wantEdge{"b.example": {first: t0, last: t0}, "c.example": {first: t1, last: t1}},
	}, {
		name:  "blocked after the home page adds the links read",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v:     visit("a.example", t1, data.OutcomeBotProtection, link("b.example"), link("c.example")),
		want:  map[string]wantEdge{"b.example": {first: t0, last: t1}, "c.example": {first: t1, last: t1}},
	}, {
		name:  "http error leaves edges untouched",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v:     visit("a.example", t1, data.OutcomeHTTPError, link("c.example")),
		want:  map[string]wantEdge{"b.example": {first: t0, last: t0}},
	}, {
		name: "duplicates merge: nofollow only if all are, sitewide if any is, words united",
		v: visit("a.example", t0, data.OutcomeOK,
			nofollow("b.example"), link("www.b.example", "cats"), link("https://B.example/x", "dogs", "cats"),
			nofollow("c.example"), nofollow("shop.c.example"),
			sitewide("d.example"), link("d.example", "home")),
		want: map[string]wantEdge{
			"b.example": {first: t0, last: t0, words: []string{"cats", "dogs"}},
			"c.example": {first: t0, last: t0, nofollow: true},
			"d.example": {first: t0, last: t0, sitewide: true, words: []string{"home"}},
		},
	}, {
		name: "words are capped",
		v:    visit("a.example", t0, data.OutcomeOK, link("b.example", many[:10]...), link("b.example", many[5:]...)),
		want: map[string]wantEdge{"b.example": {first: t0, last: t0, words: many[:data.MaxWordsPerLink]}},
	}, {
		name:  "partial visit merges flags into known edges",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, nofollow("b.example"), link("c.example", "x"), sitewide("d.example"))},
		v:     partial("a.example", t1, link("b.example"), nofollow("c.example"), link("c.example", "y"), link("d.example")),
		want: map[string]wantEdge{
			"b.example": {first: t0, last: t1},
			"c.example": {first: t0, last: t1, words: []string{"x", "y"}},
			"d.example": {first: t0, last: t1, sitewide: true},
		},
	}, {
		name:  "partial visit keeps an edge followed once seen followed",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example"))},
		v:     partial("a.example", t1, nofollow("b.example")),
		want:  map[string]wantEdge{"b.example": {first: t0, last: t1}},
	}, {
		name:  "complete visit replaces flags and words",
		prior: []*data.VisitResult{visit("a.example", t0, data.OutcomeOK, link("b.example", "old"), sitewide("c.example"))},
		v:     visit("a.example", t1, data.OutcomeOK, nofollow("b.example"), link("c.example", "new")),
		want: map[string]wantEdge{
			"b.example": {first: t0, last: t1, nofollow: true},
			"c.example": {first: t0, last: t1, words: []string{"new"}},
		},
	}, {
		name: "self-links and invalid targets are dropped",
		v: visit("a.example", t0, data.OutcomeOK,
			link("a.example"), link("www.a.example"), link("https://A.EXAMPLE/page"),
			link("127.0.0.1"), link("localhost"), link(""), link("co.uk"), link("intranet"), link("b..example"),
			link("b.example")),
		want: map[string]wantEdge{"b.example": {first: t0, last: t0}},
	}, {
		name: "targets are normalised",
		v:    visit("a.example", t0, data.OutcomeOK, link("https://www.Bücher.de:443/x"), link("shop.example.co.uk")),
		want: map[string]wantEdge{
			"xn--bcher-kva.de": {first: t0, last: t0},
			"example.co.uk":    {first: t0, last: t0},
		},
	}, {
		name:  "links to removed domains are dropped",
		prior: []*data.VisitResult{visit("gone.example", t0, data.OutcomeOK)}, // removed below
		v:     visit("a.example", t1, data.OutcomeOK, link("gone.example"), link("www.gone.example"), link("b.example")),
		want:  map[string]wantEdge{"b.example": {first: t1, last: t1}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openMem(t)
			for _, p := range tt.prior {
				must(t, s.RecordVisit(p))
			}
			must(t, s.RemoveDomain("gone.example", "test", "none", t0))
			must(t, s.RecordVisit(tt.v))
			got := map[string]wantEdge{}
			for dst, e := range edgesOf(t, s, "a.example") {
				got[dst] = wantEdge{first: e.FirstSeen, last: e.LastSeen, nofollow: e.Nofollow, sitewide: e.Sitewide, words: e.Words}
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("edges of a.example\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestRecordNewTargets(t *testing.T) {
	s := openMem(t)
	must(t, s.RecordVisit(visit("a.example", t0, data.OutcomeOK, link("b.example"), nofollow("c.example"))))
	must(t, s.RecordVisit(visit("d.example", t1, data.OutcomeOK, nofollow("b.example"), link("c.example"))))
	a, b, c := stateOf(t, s, "a.example"), stateOf(t, s, "b.example"), stateOf(t, s, "c.example")
	if !b.FirstSeen.Equal(t0) || b.Visited() || !b.FollowedIn {
		t.Errorf("b: %+v", b)
	}
	if !c.FirstSeen.Equal(t0) || !c.FollowedIn {
		t.Errorf("c (nofollow at t0, followed at t1): %+v", c)
	}
	if a.FollowedIn {
		t.Errorf("a has no in-link: %+v", a)
	}
	// Known only through a nofollow link: listed, never FollowedIn.
	s2 := openMem(t)
	must(t, s2.RecordVisit(visit("a.example", t0, data.OutcomeOK, nofollow("n.example"))))
	if n := stateOf(t, s2, "n.example"); n.FollowedIn || !n.FirstSeen.Equal(t0) {
		t.Errorf("nofollow-only target: %+v", n)
	}
	// A visit to an unknown domain creates it, first seen at the visit.
	if d := stateOf(t, s, "d.example"); !d.FirstSeen.Equal(t1) || !d.LastVisit.Equal(t1) {
		t.Errorf("visited unknown domain: %+v", d)
	}
}

func TestRecordState(t *testing.T) {
	yes, no := true, false
	type step struct {
		v     *data.VisitResult
		check func(t *testing.T, st data.DomainState)
	}
	with := func(v *data.VisitResult, f func(*data.VisitResult)) *data.VisitResult { f(v); return v }
	// The store records the facts; the revisit policy computes the
	// retry time from them (schedule.RetryAt).
	failures := func(n int, retry time.Time) func(t *testing.T, st data.DomainState) {
		return func(t *testing.T, st data.DomainState) {
			t.Helper()
			if at := schedule.RetryAt(&st); st.Failures != n || !at.Equal(retry) {
				t.Errorf("failures %d, retry at %v; want %d, %v", st.Failures, at, n, retry)
			}
			if !st.RetryAt.IsZero() {
				t.Errorf("the store recorded a retry time %v: only format 2 did", st.RetryAt)
			}
		}
	}
	day := 24 * time.Hour
	tests := []struct {
		name  string
		steps []step
	}{{
		name: "the same failure doubles the wait; another resets the count; success clears it",
		steps: []step{
			{visit("a.example", t0, data.OutcomeTimeout), failures(1, t0.Add(day))},
			{visit("a.example", t1, data.OutcomeTimeout), failures(2, t1.Add(2*day))},
			{visit("a.example", t2, data.OutcomeTimeout), failures(3, t2.Add(4*day))},
			{visit("a.example", t2.Add(day), data.OutcomeDNSError), failures(1, t2.Add(2*day))},
			{visit("a.example", t2.Add(2*day), data.OutcomeOK), failures(0, time.Time{})},
			{visit("a.example", t2.Add(3*day), data.OutcomeConnectError), failures(1, t2.Add(4*day))},
			{visit("a.example", t2.Add(4*day), data.OutcomeHTTPError), failures(0, time.Time{})},
		},
	}, {
		name: "throttling honours Retry-After, bot protection waits 90 days",
		steps: []step{
			{with(visit("a.example", t0, data.OutcomeThrottled), func(v *data.VisitResult) { v.RetryAfter = 3 * time.Hour }),
				failures(1, t0.Add(3*time.Hour))},
			{visit("a.example", t1, data.OutcomeThrottled), failures(2, t1.Add(2*time.Hour))},
			{visit("a.example", t2, data.OutcomeBotProtection), failures(1, t2.Add(90*day))},
		},
	}, {
		name: "throttled or blocked after the home page: the wait applies all the same",
		steps: []step{
			{with(visit("a.example", t0, data.OutcomeThrottled, link("b.example")), func(v *data.VisitResult) { v.RetryAfter = 200 * day }),
				failures(1, t0.Add(200*day))},
			{visit("a.example", t0.Add(200*day), data.OutcomeOK), failures(0, time.Time{})},
			{visit("a.example", t0.Add(201*day), data.OutcomeBotProtection, link("b.example")), failures(1, t0.Add(291*day))},
		},
	}, {
		name: "last visit, status and outcome",
		steps: []step{
			{with(visit("a.example", t0, data.OutcomeMoved), func(v *data.VisitResult) { v.HTTPStatus = 301 }),
				func(t *testing.T, st data.DomainState) {
					if !st.LastVisit.Equal(t0) || st.LastStatus != 301 || st.LastOutcome != data.OutcomeMoved {
						t.Errorf("%+v", st)
					}
				}},
		},
	}, {
		name: "HTTPS, IPv6, ASN and operator are kept when a visit does not learn them",
		steps: []step{
			{with(visit("a.example", t0, data.OutcomeOK), func(v *data.VisitResult) {
				v.HTTPS, v.IPv6, v.ASN, v.NetworkOperator = &yes, &no, 64500, "Example Net"
			}), func(t *testing.T, st data.DomainState) {
				if st.HTTPS == nil || !*st.HTTPS || st.IPv6 == nil || *st.IPv6 || st.ASN != 64500 || st.NetworkOperator != "Example Net" {
					t.Errorf("%+v", st)
				}
			}},
			{visit("a.example", t1, data.OutcomeTimeout), func(t *testing.T, st data.DomainState) {
				if st.HTTPS == nil || !*st.HTTPS || st.IPv6 == nil || *st.IPv6 || st.ASN != 64500 || st.NetworkOperator != "Example Net" {
					t.Errorf("%+v", st)
				}
			}},
			{with(visit("a.example", t2, data.OutcomeOK), func(v *data.VisitResult) { v.HTTPS, v.IPv6 = &no, &yes }),
				func(t *testing.T, st data.DomainState) {
					if *st.HTTPS || !*st.IPv6 {
						t.Errorf("%+v", st)
					}
				}},
		},
	}, {
		name: "opted out: set by the outcome, changed only when robots.txt was read",
		steps: []step{
			{visit("a.example", t0, data.OutcomeOptedOut), func(t *testing.T, st data.DomainState) {
				if !st.OptedOut || st.Failures != 0 {
					t.Errorf("%+v", st)
				}
			}},
			{with(visit("a.example", t1, data.OutcomeRobotsUnavailable), func(v *data.VisitResult) { v.RobotsStatus = 0 }),
				func(t *testing.T, st data.DomainState) {
					if !st.OptedOut {
						t.Error("robots.txt not read, but OptedOut changed")
					}
				}},
			{visit("a.example", t2, data.OutcomeOK), func(t *testing.T, st data.DomainState) {
				if st.OptedOut {
					t.Error("robots.txt read and allows us, but still OptedOut")
				}
			}},
			{with(visit("a.example", t2.Add(day), data.OutcomePartial), func(v *data.VisitResult) { v.OptedOut = true }),
				func(t *testing.T, st data.DomainState) {
					if !st.OptedOut {
						t.Error("robots.txt read and shuts us out, but not OptedOut")
					}
				}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openMem(t)
			for i, st := range tt.steps {
				must(t, s.RecordVisit(st.v))
				t.Run(fmt.Sprint("step", i), func(t *testing.T) { st.check(t, stateOf(t, s, st.v.Domain)) })
			}
			if got := len(dumpStore(t, s).Visits); got != len(tt.steps) {
				t.Errorf("%d visit-log entries, want %d", got, len(tt.steps))
			}
		})
	}
}

func TestRecordVisitLog(t *testing.T) {
	s := openMem(t)
	v := visit("a.example", t0, data.OutcomePartial)
	v.FinishedAt, v.RobotsReadAt, v.RobotsStatus = t0.Add(time.Minute), t0.Add(time.Second), 404
	v.HTTPStatus, v.Pages, v.Bytes, v.Error = 200, 7, 123456, "stopped: 503 on page 8"
	must(t, s.RecordVisit(v))
	want := []data.VisitLogEntry{{
		DomainID: 0, StartedAt: t0, FinishedAt: t0.Add(time.Minute), RobotsReadAt: t0.Add(time.Second),
		RobotsStatus: 404, Outcome: data.OutcomePartial, HTTPStatus: 200, Pages: 7, Bytes: 123456,
		Error: "stopped: 503 on page 8",
	}}
	if got := dumpStore(t, s).Visits; !reflect.DeepEqual(got, want) {
		t.Errorf("visit log\n%+v\nwant\n%+v", got, want)
	}
}

func TestRecordRefusals(t *testing.T) {
	tests := []struct {
		name string
		v    *data.VisitResult
		want error
	}{
		{"nil visit", nil, nil},
		{"empty domain", visit("", t0, data.OutcomeOK), domain.ErrEmptyHost},
		{"not normalised", visit("www.b.example", t0, data.OutcomeOK), domain.ErrInvalidDomain},
		{"upper case", visit("B.example", t0, data.OutcomeOK), domain.ErrInvalidDomain},
		{"IP address", visit("127.0.0.1", t0, data.OutcomeOK), domain.ErrIPAddress},
		{"unknown outcome", visit("b.example", t0, "fine"), nil},
		{"no start time", visit("b.example", time.Time{}, data.OutcomeOK), nil},
		{"removed domain", visit("gone.example", t1, data.OutcomeOK), ErrRemoved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openMem(t)
			must(t, s.RecordVisit(visit("a.example", t0, data.OutcomeOK, link("c.example"))))
			must(t, s.RemoveDomain("gone.example", "test", "none", t0))
			before := dumpStore(t, s)
			// The bad visit comes second in a batch: the first must not be
			// written either.
			good := visit("a.example", t1, data.OutcomeOK, link("new.example"))
			err := s.RecordVisits([]*data.VisitResult{good, tt.v})
			var ve *VisitError
			if !errors.As(err, &ve) || ve.Index != 1 {
				t.Fatalf("error %v; want a *VisitError for visit 1", err)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("error %v; want %v", err, tt.want)
			}
			if after := dumpStore(t, s); !reflect.DeepEqual(before, after) {
				t.Fatalf("a refused batch wrote something\nbefore %+v\nafter  %+v", before, after)
			}
			// Ids of the failed batch are handed out again: no gaps.
			must(t, s.RecordVisits([]*data.VisitResult{good}))
			if n := stateOf(t, s, "new.example"); n.ID != before.N {
				t.Errorf("id after a failed batch %d, want %d", n.ID, before.N)
			}
		})
	}
}

func TestRecordBatchSameDomainTwice(t *testing.T) {
	s := openMem(t)
	must(t, s.RecordVisits([]*data.VisitResult{
		visit("a.example", t0, data.OutcomeTimeout),
		visit("a.example", t1, data.OutcomeTimeout),
		visit("b.example", t1, data.OutcomeOK, link("a.example")),
		partial("a.example", t2, link("c.example")),
	}))
	a := stateOf(t, s, "a.example")
	if a.LastOutcome != data.OutcomePartial || a.Failures != 0 || !a.FollowedIn || !a.FirstSeen.Equal(t0) {
		t.Errorf("a: %+v", a)
	}
	if d := dumpStore(t, s); len(d.Visits) != 4 || d.N != 3 {
		t.Errorf("%d visits, %d domains", len(d.Visits), d.N)
	}
}

func TestSnapshotIsolation(t *testing.T) {
	s := openMem(t)
	must(t, s.RecordVisit(visit("a.example", t0, data.OutcomeOK, link("b.example"))))
	sn, err := s.Snapshot()
	must(t, err)
	defer sn.Close()
	before := dumpSnapshot(t, sn)

	must(t, s.RecordVisit(visit("a.example", t1, data.OutcomeOK, link("c.example"), link("d.example"))))
	must(t, s.RemoveDomain("b.example", "test", "none", t1))

	if again := dumpSnapshot(t, sn); !reflect.DeepEqual(before, again) {
		t.Errorf("snapshot changed under later writes\nbefore %+v\nafter  %+v", before, again)
	}
	if before.N != 2 || len(before.Edges) != 1 || len(before.Visits) != 1 {
		t.Errorf("snapshot: %+v", before)
	}
	if now := dumpStore(t, s); now.N != 4 || len(now.Edges) != 2 || len(now.Visits) != 2 {
		t.Errorf("after: %+v", now)
	}
}

func TestSnapshotOrder(t *testing.T) {
	s := openMem(t)
	names := []string{"e.example", "c.example", "a.example", "d.example", "b.example"}
	must(t, s.AddDomains(names, t0, false))
	// Visits recorded out of time order, links listed in no order.
	for i, at := range []time.Time{t2, t0, t1} {
		for j, n := range names {
			must(t, s.RecordVisit(visit(n, at.Add(time.Duration(j)*time.Minute), data.OutcomeOK,
				link(names[(j+1+i)%5]), link(names[(j+3)%5]), link(fmt.Sprintf("x%d.example", 4-j)))))
		}
	}
	d := dumpStore(t, s)
	if !sort.SliceIsSorted(d.Domains, func(i, j int) bool { return d.Domains[i].ID < d.Domains[j].ID }) {
		t.Error("domains not in id order")
	}
	for i := range d.Domains {
		if d.Domains[i].ID != uint32(i) {
			t.Fatalf("ids not dense: %d at %d", d.Domains[i].ID, i)
		}
	}
	if !sort.SliceIsSorted(d.Edges, func(i, j int) bool {
		a, b := d.Edges[i], d.Edges[j]
		return a.SrcID < b.SrcID || a.SrcID == b.SrcID && a.DstID < b.DstID
	}) {
		t.Errorf("edges not in (src, dst) order: %+v", d.Edges)
	}
	if !sort.SliceIsSorted(d.Visits, func(i, j int) bool {
		a, b := d.Visits[i], d.Visits[j]
		return a.DomainID < b.DomainID || a.DomainID == b.DomainID && a.StartedAt.Before(b.StartedAt)
	}) {
		t.Errorf("visits not in (domain, started) order")
	}
	// The last visit recorded (i=2) links (j+3)%5 twice: 2 edges each.
	if len(d.Visits) != 15 || len(d.Edges) != 10 {
		t.Errorf("%d visits, %d edges; want 15, 10", len(d.Visits), len(d.Edges))
	}
}

// TestConcurrent runs writers and snapshot readers at once (for -race) and
// checks that every snapshot sees whole visits: each visit's edge set
// names its own visit number.
func TestConcurrent(t *testing.T) {
	s := openMem(t)
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 30 {
				src := fmt.Sprintf("w%d.example", w)
				tag := fmt.Sprintf("v%d-%d.example", w, i)
				v := visit(src, t0.Add(time.Duration(i)*time.Minute), data.OutcomeOK, link(tag), link("hub.example", tag[:3]))
				if err := s.RecordVisits([]*data.VisitResult{v}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range 20 {
			sn, err := s.Snapshot()
			if err != nil {
				t.Error(err)
				return
			}
			edges, visits := map[uint32]int{}, map[uint32]int{}
			err = sn.Edges(func(e *data.EdgeRecord) error { edges[e.SrcID]++; return nil })
			if err == nil {
				err = sn.Visits(func(v *data.VisitLogEntry) error { visits[v.DomainID]++; return nil })
			}
			sn.Close()
			if err != nil {
				t.Error(err)
				return
			}
			// A visit seen means its whole edge set is seen: 2 edges.
			for id := range visits {
				if edges[id] != 2 {
					t.Errorf("snapshot sees %d visits of id %d but %d edges", visits[id], id, edges[id])
				}
			}
			if len(edges) != len(visits) {
				t.Errorf("edges of %d sources, visits of %d", len(edges), len(visits))
			}
		}
	}()
	wg.Wait()
	if d := dumpStore(t, s); len(d.Visits) != 90 || len(d.Edges) != 6 {
		t.Errorf("%d visits, %d edges; want 90, 6", len(d.Visits), len(d.Edges))
	}
}

// TestFollowedMark: a followed link marks a target the batch writes anyway
// (here one it creates) in its record, and any other with an f/ key.
func TestFollowedMark(t *testing.T) {
	s := openMem(t)
	must(t, s.AddDomains([]string{"old.example"}, t0, false))
	must(t, s.RecordVisit(visit("a.example", t0, data.OutcomeOK, link("new.example"), nofollow("nf.example"), link("old.example"))))
	var fkeys []string
	must(t, s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: []byte(prefixFollow)})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			id, err := idFromKey(it.Item().Key())
			if err != nil {
				return err
			}
			st, _, err := s.DomainByID(id)
			fkeys = append(fkeys, st.Name)
			if err != nil {
				return err
			}
		}
		return nil
	}))
	if !slices.Equal(fkeys, []string{"old.example"}) {
		t.Errorf("f/ keys of %v, want old.example's alone", fkeys)
	}
	for name, want := range map[string]bool{"new.example": true, "old.example": true, "nf.example": false, "a.example": false} {
		if got := stateOf(t, s, name).FollowedIn; got != want {
			t.Errorf("%s: FollowedIn %v, want %v", name, got, want)
		}
	}
	for _, st := range dumpStore(t, s).Domains {
		if want := st.Name == "new.example" || st.Name == "old.example"; st.FollowedIn != want {
			t.Errorf("snapshot: %s FollowedIn %v, want %v", st.Name, st.FollowedIn, want)
		}
	}
}
