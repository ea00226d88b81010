package crawl

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/mapthenet/mapthenet/data"
)

// failingStore refuses every visit, as a store on a full disk does.
type failingStore struct {
	Store
	calls atomic.Int32
}

var errStoreFull = errors.New("graph: not enough free disk space")

func (f *failingStore) RecordVisits([]*data.VisitResult) error {
	f.calls.Add(1)
	return errStoreFull
}

// A store that refuses writes stops the crawl, which returns the store's
// error, rather than going on to visit sites it cannot record.
func TestRunStopsWhenTheStoreFails(t *testing.T) {
	w := newWeb(t)
	var seeds []string
	for _, d := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		w.html(d+".test/", htmlPage())
		seeds = append(seeds, d+".test")
	}
	store := &failingStore{Store: openStore(t)}
	opts := w.options()
	opts.Seeds = []string{writeFile(t, "seeds.txt", strings.Join(seeds, "\n"))}
	opts.UntilIdle = true
	opts.SitesInFlight = 1
	stats, err := Run(context.Background(), store, opts)
	if !errors.Is(err, errStoreFull) {
		t.Fatalf("Run: %v, want the store's error", err)
	}
	if stats.Visits >= len(seeds) {
		t.Errorf("%d visits after the store failed, want the crawl stopped early", stats.Visits)
	}
}
