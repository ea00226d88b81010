// Package simweb is a simulated web on loopback for tests, benchmarks and the
// demo: a seeded, deterministic set of sites served over real HTTP and HTTPS
// from one listener, which the real crawler crawls with
// `--connect-to ::127.0.0.1:PORT --ca-cert FILE`.
//
// The web knows its own truth: Sites lists every site with its kind and the
// outcome a correct crawler reaches; ExpectedEdges gives the domain-level
// edges (with their nofollow and sitewide flags and link words) a correct
// crawler records; the request log (Requests) and the Check* functions
// verify DESIGN.md's "Behaviour a site owner can see" from the server's side.
//
// Sites are registrable domains under TLDs the Public Suffix List does not
// know ("s00042.example", "robots-5xx.example"), so their eTLD+1 is the name
// itself; three sit under a shared platform (Config.Platform, github.io by
// default, a suffix of the list's private section), so that alice.github.io
// and bob.github.io are distinct registrable domains sharing one server.
//
// Assumptions behind ExpectedEdges (see expect.go): each site is visited once,
// completely, with at least 8 pages per visit (the lowest tier's budget; the
// default fixtures keep every finite site within 8 pages, a unit test checks
// it); same-site links are read breadth-first in document order; feeds
// advertised by <link rel="alternate"> are read and their links count.
//
// Use (see Example and the e2e package):
//
//	w, _ := simweb.New(simweb.Config{Seed: 1, Sites: 100, SpecialShare: 0.2})
//	w.Start()
//	defer w.Close()
//	w.WriteSeeds(seeds)
//	// mapthenet crawl --seeds SEEDS --until-idle --connect-to w.ConnectTo() \
//	//   --ca-cert w.CAFile() --min-delay 20ms --platform github.io=50ms
//	violations := w.CheckAll(w.Requests(), simweb.Rules{MinDelay: 20 * time.Millisecond, ...})
//	// compare the snapshot's edges.parquet with w.ExpectedEdges()
//
// The pipeline's own packages never import simweb.
package simweb
