package snapshot

import (
	"fmt"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// DomainJSON is a domain's report as JSON: the fields of `mapthenet rank
// DOMAIN --json`, which the site's /api/d/{domain} extends with its own
// (DESIGN.md, "serve"). Defined once, with its parts below, so that the
// two cannot drift apart.
type DomainJSON struct {
	Domain        string         `json:"domain"`
	Rank          *int64         `json:"rank"` // nil: unranked
	PrevRank      *int64         `json:"prev_rank"`
	Move          *int64         `json:"move"` // prev_rank - rank; nil when either is
	Score         float64        `json:"score"`
	Tier          int32          `json:"tier"`
	RevisitDays   int32          `json:"revisit_days"`
	PagesPerVisit int32          `json:"pages_per_visit"`
	InDomains     int64          `json:"in_domains"`
	OutDomains    int64          `json:"out_domains"`
	OptedOut      bool           `json:"opted_out"`
	FirstSeen     *time.Time     `json:"first_seen"`
	LastVisit     *time.Time     `json:"last_visit"`
	LastOutcome   *string        `json:"last_outcome"`
	LastStatus    *int32         `json:"last_status"`
	Failures      int32          `json:"failures"`
	LinkWords     []LinkWordJSON `json:"link_words"`
	Visits        []VisitJSON    `json:"visits"`     // newest first, at most MaxTimelineVisits
	NextVisit     *NextVisitJSON `json:"next_visit"` // nil: not scheduled
}

// LinkWordJSON is one word of the links to a domain and how many linking
// domains use it.
type LinkWordJSON struct {
	Word  string `json:"word"`
	Sites int64  `json:"sites"`
}

// VisitJSON is one visit of a domain's timeline.
type VisitJSON struct {
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
	Outcome    string    `json:"outcome"`
	HTTPStatus int32     `json:"http_status"`
	Pages      int32     `json:"pages"`
	Bytes      int64     `json:"bytes"`
	Error      *string   `json:"error"`
}

// NextVisitJSON is a domain's row of the schedule, with Why, the reason
// in words (NextVisitWhy).
type NextVisitJSON struct {
	At       time.Time `json:"at"`
	Reason   string    `json:"reason"` // new, revisit or retry
	Why      string    `json:"why"`
	Tier     int32     `json:"tier"`
	Pages    int32     `json:"pages"`
	Priority int64     `json:"priority"`
}

// NextVisitWhy says in words why a domain's next visit is when it is, for
// a schedule row of reason (data.ReasonNew, ...), from the domain's
// linking domains, tier, revisit interval, failures in a row and last
// outcome ("" when none is known).
func NextVisitWhy(reason string, inDomains int64, tier, revisitDays, failures int32, lastOutcome string) string {
	switch reason {
	case data.ReasonNew:
		return fmt.Sprintf("never visited yet: new domains wait in line, those with the most linking domains first (%d link here)", inDomains)
	case data.ReasonRevisit:
		return fmt.Sprintf("a revisit: tier %d is visited every %d days", tier, revisitDays)
	case data.ReasonRetry:
		failed := "a failed visit"
		if lastOutcome != "" {
			failed = "a failed visit (" + lastOutcome + ")"
		}
		return fmt.Sprintf("a retry after %s: %d in a row; each failure again doubles the wait", failed, failures)
	}
	return reason
}

// JSON is the report as JSON.
func (r DomainReport) JSON() DomainJSON {
	d := DomainJSON{
		Domain: r.Domain, Rank: r.Rank, PrevRank: r.PrevRank, Move: r.Move, Score: r.Score,
		Tier: r.Tier, RevisitDays: r.RevisitDays, PagesPerVisit: r.PagesPerVisit,
		InDomains: r.InDomains, OutDomains: r.OutDomains, OptedOut: r.OptedOut,
		LastVisit: r.LastVisit, LastOutcome: r.LastOutcome, LastStatus: r.LastStatus,
		Failures: r.Failures, LinkWords: []LinkWordJSON{}, Visits: []VisitJSON{},
	}
	if !r.FirstSeen.IsZero() {
		d.FirstSeen = &r.FirstSeen
	}
	for _, lw := range r.LinkWords {
		d.LinkWords = append(d.LinkWords, LinkWordJSON{Word: lw.Word, Sites: lw.Sites})
	}
	for _, v := range r.Visits {
		d.Visits = append(d.Visits, VisitJSON{StartedAt: v.StartedAt, FinishedAt: v.FinishedAt, Outcome: v.Outcome,
			HTTPStatus: v.HTTPStatus, Pages: v.Pages, Bytes: v.Bytes, Error: v.Error})
	}
	if n := r.Next; n != nil {
		d.NextVisit = &NextVisitJSON{At: n.NextVisit, Reason: n.Reason, Tier: n.Tier, Pages: n.Pages, Priority: n.Priority,
			Why: r.Why()}
	}
	return d
}

// Why says in words why the domain's next visit is when it is (see
// NextVisitWhy); "" when it is not scheduled.
func (r DomainReport) Why() string {
	if r.Next == nil {
		return ""
	}
	last := ""
	if r.LastOutcome != nil {
		last = *r.LastOutcome
	}
	return NextVisitWhy(r.Next.Reason, r.InDomains, r.Tier, r.RevisitDays, r.Failures, last)
}
