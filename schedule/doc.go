// Package schedule is mapthenet's revisit policy, in one place: when a
// domain is visited next, how many pages a visit reads, and in which order
// due domains are taken (DESIGN.md, "Revisit tiers", "Responses", and
// "Domains never visited wait in line").
//
//	tiers.go    the tier table: rank → revisit interval and pages per visit
//	            (Tiers, DefaultTiers, Validate, For, Lowest, ParseTiers)
//	backoff.go  the wait after a failed visit: Retry-After, doubling, caps
//	            (Backoff, MaxBackoff) and the retry time of a domain (RetryAt)
//	next.go     a domain's next visit and why (Policy.Next) and the discovery
//	            threshold for never-visited domains (Discovered)
//	order.go    the schedule file's order (CompareSchedule, Sort) and the
//	            order a crawl takes due and newly found domains in
//	            (CompareDue, CompareFound)
//
// The link store (package graph) records facts: when a domain was visited,
// how the visit went, how many visits in a row failed and what Retry-After
// the server sent. This package turns them into times. The rebuild calls it
// to write each domain's tier and the schedule; the crawl calls it for the
// pages of a first visit, the discovery threshold within a run, and the
// order it takes domains in. One tier table and one discovery threshold are
// configured once (the data directory's config.toml keys tiers and
// min-in-domains, also flags of crawl and rebuild) and used by both.
//
// schedule imports only data.
package schedule
