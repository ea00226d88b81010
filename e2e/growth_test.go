package e2e

import (
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/mapthenet/mapthenet/simweb"
)

// storeSize sums the store's files after Close: all of them, and the ones
// that hold data (tables, value log, manifest). Badger's DISCARD (1 MiB,
// preallocated, value-log GC statistics) and KEYREGISTRY are the same size
// in every store and would swamp a small one's figures.
func storeSize(t *testing.T, dir string) (all, dataFiles int64) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		all += info.Size()
		if name := d.Name(); name != "DISCARD" && name != "KEYREGISTRY" {
			dataFiles += info.Size()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return all, dataFiles
}

// Bounded growth: revisits replace a domain's edges, so ten rounds of
// revisits of the same web (each a crawl and a rebuild, thirteen months
// apart so that everything is due) leave the store about one round's size.
// The visit log is history and grows by a visit a visit, by design
// (visits.parquet keeps every visit): the test measures what one visit adds
// from the last round and holds everything else to 20% of the first
// round's store. Replaced records that linger (the edge sets of past
// rounds) show either as a larger cost per visit or as a lump above the
// visit log's line.
func TestBoundedGrowth(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls a simulated web ten times (about 30 s)")
	}
	r := serve(t, simweb.Config{Seed: 21, Sites: 80, SpecialShare: 0.1,
		// No calendar: a revisit's larger page budget would read more of
		// it, and the store would grow for a reason that is not garbage.
		SpecialKinds: []simweb.Kind{simweb.KindRel, simweb.KindMetaRobots, simweb.KindRobots404, simweb.KindMoved,
			simweb.KindThrottle429Date, simweb.KindNonHTML},
		Skip: []simweb.Kind{simweb.KindRobotsHang, simweb.KindSlow, simweb.KindCrawlDelay, simweb.KindCalendar}})
	store := filepath.Join(r.dir, "store")
	const rounds = 10
	var size [rounds + 1]int64 // data files after each round
	var visits [rounds + 1]int // visits in the store after each round
	at := now
	for round := 1; round <= rounds; round++ {
		r.crawl(t, at, nil)
		all, dataFiles := storeSize(t, store)
		size[round], visits[round] = dataFiles, visits[round-1]+r.stats.Visits
		t.Logf("round %d: %d visits; store %d bytes, %d in data files", round, r.stats.Visits, all, dataFiles)
		at = at.AddDate(0, 13, 0)
	}

	// What a visit adds, from the last round: a visit-log entry.
	perVisit := float64(size[rounds]-size[rounds-1]) / float64(visits[rounds]-visits[rounds-1])
	log := perVisit * float64(visits[rounds]-visits[1])
	rest := float64(size[rounds]-size[1]) - log
	t.Logf("after %d rounds: %d bytes against %d after one (%.0f%%); the visit log's %d further visits at %.1f bytes each "+
		"account for %.0f bytes, leaving %.0f bytes (%.1f%% of round one's store)",
		rounds, size[rounds], size[1], 100*float64(size[rounds])/float64(size[1]), visits[rounds]-visits[1],
		perVisit, log, rest, 100*rest/float64(size[1]))
	// A visit-log entry is some 36 bytes on disk; a visit whose replaced
	// edge set lingered would add that set too (about 100 bytes here).
	if perVisit > 48 {
		t.Errorf("the last round added %.1f bytes a visit: more than a visit-log entry (replaced records linger)", perVisit)
	}
	if rest > 0.2*float64(size[1]) {
		t.Errorf("besides the visit log the store grew by %.0f bytes over %d rounds of revisits, more than 20%% of round one's %d",
			rest, rounds, size[1])
	}
}
