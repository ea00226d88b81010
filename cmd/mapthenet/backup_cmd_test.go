package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
)

// visitsByDomain lists each domain's visit start times, in order.
func visitsByDomain(t *testing.T, s *graph.Store) map[string][]time.Time {
	t.Helper()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	names := map[uint32]string{}
	if err := sn.Domains(func(d *data.DomainState) error { names[d.ID] = d.Name; return nil }); err != nil {
		t.Fatal(err)
	}
	out := map[string][]time.Time{}
	if err := sn.Visits(func(v *data.VisitLogEntry) error {
		out[names[v.DomainID]] = append(out[names[v.DomainID]], v.StartedAt)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// edgesByDomain lists each domain's out-edge targets.
func edgesByDomain(t *testing.T, s *graph.Store) map[string][]string {
	t.Helper()
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	names := map[uint32]string{}
	if err := sn.Domains(func(d *data.DomainState) error { names[d.ID] = d.Name; return nil }); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	if err := sn.Edges(func(e *data.EdgeRecord) error {
		out[names[e.SrcID]] = append(out[names[e.SrcID]], names[e.DstID])
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// store backup while a crawl holds the store and writes: the crawl writes
// the backup over crawl.sock; the restored store holds, domain by domain,
// every visit committed before the backup began and then only a run of
// the later ones, each whole (its edges with it), never one out of order.
func TestStoreBackupThroughCrawl(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	store, err := graph.Open(filepath.Join(dir, "store"), graph.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	srv, err := serveControl(shard.One(store), dir, slog.New(slog.DiscardHandler), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	at := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	// Round r visits every domain once (one transaction), each linking to
	// t<r>.example only: a domain's edges name the round of its last visit.
	batch := func(round int) []*data.VisitResult {
		var vs []*data.VisitResult
		for d := range 20 {
			start := at.Add(time.Duration(round) * time.Hour)
			vs = append(vs, &data.VisitResult{Domain: fmt.Sprintf("d%02d.example", d), StartedAt: start, FinishedAt: start.Add(time.Minute),
				Outcome: data.OutcomeOK, Complete: true, Pages: 1,
				Links: []data.Link{{Dst: fmt.Sprintf("t%03d.example", round)}}})
		}
		return vs
	}
	for round := range 5 {
		if err := store.RecordVisits(batch(round)); err != nil {
			t.Fatal(err)
		}
	}
	// The writer goes on until the backup has returned, so the backup is
	// taken while visits are committed.
	stop, done := make(chan struct{}), make(chan error, 1)
	written := make(chan struct{})
	go func() {
		for round := 5; ; round++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if err := store.RecordVisits(batch(round)); err != nil {
				done <- err
				return
			}
			if round == 8 {
				close(written)
			}
		}
	}()
	<-written
	before := visitsByDomain(t, store) // committed when the backup begins, or earlier
	file := filepath.Join(t.TempDir(), "backup")
	code, out, errOut := runIn(t, dir, "store", "backup", "--out", file)
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("backup: exit %d\n%s%s", code, out, errOut)
	}
	final := visitsByDomain(t, store)
	other := t.TempDir()
	if code, _, errOut := runIn(t, other, "store", "restore", file); code != 0 {
		t.Fatalf("restore: exit %d: %s", code, errOut)
	}
	restored, err := graph.Open(filepath.Join(other, "store"), graph.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Close()
	got := visitsByDomain(t, restored)
	edges := edgesByDomain(t, restored)
	// One view: each round (one transaction over every domain) is wholly
	// in the backup or wholly out, so every domain has as many visits.
	n := len(got["d00.example"])
	if len(got) != 20 {
		t.Errorf("%d domains with visits restored, want 20", len(got))
	}
	for domain, all := range final {
		g := got[domain]
		if len(g) != n {
			t.Errorf("%s: %d visits restored, d00.example %d: the backup is not one view", domain, len(g), n)
		}
		if len(g) < len(before[domain]) || len(g) > len(all) || !slices.Equal(g, all[:len(g)]) {
			t.Errorf("%s: restored visits %v, want a prefix of %v at least %d long", domain, g, all, len(before[domain]))
			continue
		}
		// Each visit whole: the edges are those of the last visit restored.
		if want := []string{fmt.Sprintf("t%03d.example", len(g)-1)}; !slices.Equal(edges[domain], want) {
			t.Errorf("%s: restored edges %v, want %v (its visit %d's)", domain, edges[domain], want, len(g))
		}
	}
	t.Logf("visits per domain: %d committed when the backup began, %d restored, %d in the end", len(before["d00.example"]), n, len(final["d00.example"]))
}
