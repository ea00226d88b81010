// Package crawl visits domains politely and records which domains they
// link to.
//
// # A crawl
//
// Run (run.go) takes the domains that are due from the current schedule
// (schedule.go; reload.go follows a new one while running), then the seeds
// (seeds.go), then the domains its visits find (found.go), and visits
// several sites at once. Each finished visit goes to the recorder
// (recorder.go), which writes visits to the store in batches; a visit cut
// short by the crawl stopping is dropped whole.
//
// # A visit
//
// Crawler.Visit (visit.go) reads one domain, top to bottom:
//
//  1. Robots gate (robotsgate.go). findHome (visit.go) tries the site's
//     origins (https, then http; the bare name, then www.) and robotsFor
//     reads the first answering one's robots.txt, fresh, before any other
//     request to it. robotsStop is the one mapping of what robots.txt gave
//     (unreachable, unavailable, 429, too many redirects) to how the visit
//     ends; gate checks every later request against its origin's file.
//  2. Fetch (request.go). get waits for the request's turn on each pace it
//     must respect (the site's, a shared platform's, with --ip-delay the
//     server address's: crawl/pace), then the visit's client sends it
//     (crawl/fetch: the public-address guard, timeouts, request signing
//     by crawl/webbotauth, capped bodies, errors sorted into kinds).
//  3. Classify (classify.go). classifyResponse says whether a response
//     stops the visit before a link is read (throttled, gone, bot
//     protection, an error status); classifyPage (read.go) adds what that
//     means on the home page and on an inner page.
//  4. Read (read.go, readlinks.go). read follows a queued URL through its
//     same-site redirects, each hop checked (offSite, gate, redirect), and
//     readLinks reads the page's links as its body streams in (crawl/page),
//     other sites' into the visit's link set (links.go), same-site ones
//     into the breadth-first queue.
//  5. Record. The visit ends in a stop (visit.go: stop.apply) or having
//     read its queue out; its data.VisitResult, outcome and links, is what
//     Run hands to the recorder (recorder.go).
//
// Each layer is a function of its own: robotsStop, classifyResponse and
// classifyPage are pure and tested alone (layers_test.go); the visit cases
// in testdata/visits run the whole path against a loopback web
// (datadriven_test.go), one case for each way a visit ends.
//
// The rest: options.go (Options and their defaults), identity.go (who runs
// the crawl, required before a real one), metrics.go, activity.go and
// progresslog.go (what it did, for Prometheus, `mapthenet status` and the
// log), idle.go (why an idle crawl has nothing to do), asn.go (network
// operators), memory.go (the soft memory limit).
package crawl
