package e2e

import (
	"io/fs"
	"path/filepath"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/mapthenet/mapthenet/crawl"
	"github.com/mapthenet/mapthenet/data"
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

// Bounded growth: revisits replace a domain's edges and the visit log
// keeps each domain's visits of the 90 days before its latest (graph's
// DefaultVisitHistory), so ten rounds of revisits of the same web (each a
// crawl and a rebuild, thirteen months apart so that everything is due and
// the crawl's clock runs at the round's time) leave the store within 20%
// of one round's size.
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
	at := now
	for round := 1; round <= rounds; round++ {
		clock := offsetClock{clockwork.NewRealClock(), time.Until(at)}
		r.crawl(t, at, func(o *crawl.Options) { o.Clock = clock })
		all, dataFiles := storeSize(t, store)
		size[round] = dataFiles
		t.Logf("round %d: %d visits; store %d bytes, %d in data files", round, r.stats.Visits, all, dataFiles)
		at = at.AddDate(0, 13, 0)
	}
	ratio := float64(size[rounds]) / float64(size[1])
	t.Logf("after %d rounds: %d bytes in data files against %d after one (%.1f%%)", rounds, size[rounds], size[1], 100*ratio)
	if ratio > 1.2 || ratio < 0.8 {
		t.Errorf("after %d rounds of revisits the store holds %d bytes, not within 20%% of round one's %d", rounds, size[rounds], size[1])
	}
	// The last snapshot (taken before the crawl's Close trimmed) holds
	// this round's visits and each domain's latest of the round before:
	// older rounds are further back than the 90 days the log keeps.
	visits := readSnapshot[data.VisitRow](t, r, data.VisitsFile)
	if len(visits) > 2*r.stats.Visits {
		t.Errorf("visits.parquet after %d rounds: %d visits, more than the last two rounds' %d", rounds, len(visits), 2*r.stats.Visits)
	}
}

// offsetClock is the real clock moved by a fixed offset: timers run in
// real time, Now reads as the round's time.
type offsetClock struct {
	clockwork.Clock
	offset time.Duration
}

func (c offsetClock) Now() time.Time                  { return c.Clock.Now().Add(c.offset) }
func (c offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c offsetClock) Until(t time.Time) time.Duration { return t.Sub(c.Now()) }
