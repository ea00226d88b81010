package data

import "time"

// Link is one domain-level link a visit saw: from the visited domain to Dst
// (a registrable domain, never the visited one itself).
type Link struct {
	Dst string
	// Nofollow: every link to Dst seen in this visit was nofollow/ugc/
	// sponsored or on a nofollow page.
	Nofollow bool
	// Sitewide: on every HTML page read in a complete visit of 3 pages or more.
	Sitewide bool
	// Words are the distinct link words of the anchors pointing at Dst
	// (lower case, letters only, stopwords dropped), at most MaxWordsPerLink.
	Words []string
}

// MaxWordsPerLink bounds the words kept per (source, target) pair.
const MaxWordsPerLink = 16

// VisitResult is everything one visit of one domain produced. The crawler
// hands it to graph.Store.RecordVisit, which writes it all or nothing.
type VisitResult struct {
	Domain       string
	StartedAt    time.Time
	FinishedAt   time.Time
	RobotsReadAt time.Time // zero: robots.txt was not read
	RobotsStatus int       // 0: not read (network error, timeout)
	Outcome      Outcome
	HTTPStatus   int // the home page's last status; 0 when none
	Pages        int
	Bytes        int64
	Error        string // short reason, no URL or IP address
	RetryAfter   time.Duration

	// Complete is true when the visit read all it meant to: its links
	// replace the domain's edge set. Otherwise (partial) they are added.
	// Visits that read no page (failures, opted out) leave edges alone.
	Complete bool
	Links    []Link

	// Per-domain facts learnt by the visit; nil/zero when unknown.
	HTTPS           *bool
	IPv6            *bool
	ASN             int64
	NetworkOperator string
	OptedOut        bool
}

// DomainState is the store's per-domain crawl state.
type DomainState struct {
	ID              uint32
	Name            string
	FirstSeen       time.Time
	LastVisit       time.Time // zero: never visited
	LastStatus      int
	LastOutcome     Outcome
	HTTPS           *bool
	IPv6            *bool
	ASN             int64
	NetworkOperator string
	OptedOut        bool
	Failures        int           // consecutive visits that ended in LastOutcome, a failure
	RetryAfter      time.Duration // the server's Retry-After on the last visit, a failure (0: none)
	FailingSince    time.Time     // start of the first of the Failures visits (zero when none)
	// RetryAt is the retry time a format 2 store recorded with the last
	// failure (it kept the time, not the Retry-After), until the domain's
	// next visit; zero otherwise. When a domain is due again is the
	// revisit policy's to say (schedule.RetryAt), from the facts above.
	RetryAt time.Time
	// FollowedIn is true once some other domain links here with a followed
	// link: only such domains are queued for a first visit.
	FollowedIn bool
	// Seeded: named in a --seeds file; queued for a first visit even
	// without a followed in-link.
	Seeded bool
}

// Visited reports whether the domain has had at least one visit.
func (d *DomainState) Visited() bool { return !d.LastVisit.IsZero() }

// EdgeRecord is one stored edge, as a snapshot streams it.
type EdgeRecord struct {
	SrcID, DstID uint32
	FirstSeen    time.Time
	LastSeen     time.Time
	Nofollow     bool
	Sitewide     bool
	Words        []string
}

// VisitLogEntry is one entry of the store's visit log.
type VisitLogEntry struct {
	DomainID     uint32
	StartedAt    time.Time
	FinishedAt   time.Time
	RobotsReadAt time.Time
	RobotsStatus int
	Outcome      Outcome
	HTTPStatus   int
	Pages        int
	Bytes        int64
	Error        string
}
