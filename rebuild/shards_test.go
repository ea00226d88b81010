package rebuild

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/graphgen"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// webVisits are the visits of a small generated web, in the order a crawl
// would record them: one complete visit per source domain (its links with
// words), a failed visit now and then, and later a second round that
// revisits some and drops links. The same calls give the same visits.
func webVisits(t *testing.T, round int) [][]*data.VisitResult {
	t.Helper()
	g, err := graphgen.New(graphgen.Config{Domains: 1500, Edges: 9000, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	words := []string{"news", "blog", "river", "shop", "music"}
	var batches [][]*data.VisitResult
	var batch []*data.VisitResult
	var cur *data.VisitResult
	n := 0
	at := asOf.Add(-20 * day).Add(time.Duration(round) * 5 * day)
	err = g.Edges(func(src, dst uint32, nofollow bool) error {
		if round == 1 && (src%3 == 1 || dst%4 == 0 || src == 5) {
			// The second round revisits two thirds, whose complete
			// visits drop the links to a quarter of the domains: targets
			// once followed (FollowedIn) stay in the schedule without
			// them.
			return nil
		}
		if cur == nil || cur.Domain != g.Name(src) {
			if len(batch) == 97 {
				batches, batch = append(batches, batch), nil
			}
			n++
			start := at.Add(time.Duration(n) * time.Second)
			cur = &data.VisitResult{Domain: g.Name(src), StartedAt: start, FinishedAt: start.Add(time.Minute), RobotsReadAt: start,
				RobotsStatus: 200, Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 8, Bytes: int64(src) * 100, Complete: true}
			if src%17 == 0 {
				cur.Outcome, cur.Complete, cur.HTTPStatus, cur.Error = data.OutcomeTimeout, false, 0, "timeout"
			}
			batch = append(batch, cur)
		}
		cur.Links = append(cur.Links, data.Link{Dst: g.Name(dst), Nofollow: nofollow,
			Words: []string{words[(src+dst+uint32(round))%5], words[dst%3]}, Sitewide: (src+dst)%13 == 0})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return append(batches, batch)
}

// fillWeb records round of webVisits into s, with seeds before the first
// and a removal after it.
func fillWeb(t *testing.T, s *shard.Store, round int) {
	t.Helper()
	if round == 0 {
		if err := s.AddDomains([]string{"seed-one.example", "seed-two.example"}, asOf.Add(-30*day), true); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range webVisits(t, round) {
		if err := s.RecordVisits(b); err != nil {
			t.Fatal(err)
		}
	}
	if round == 0 {
		g, _ := graphgen.New(graphgen.Config{Domains: 1500, Edges: 9000, Seed: 11})
		if err := s.RemoveDomain(g.Name(5), "asked", "dns", asOf.Add(-10*day)); err != nil {
			t.Fatal(err)
		}
	}
}

// snapshotHashes rebuilds from s as of at into dataDir and returns a line
// per Parquet file: its name, SHA-256 and rows.
func snapshotHashes(t *testing.T, s *shard.Store, dataDir string, at time.Time, sortChunk ...int) []string {
	t.Helper()
	o := Options{DataDir: dataDir, Now: at, Tiers: testTiers}
	if len(sortChunk) > 0 {
		o.sortChunk = sortChunk[0]
	}
	o.Rank.Workers = 2
	m, err := Run(t.Context(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	return fileHashes(t, dataDir, m)
}

// fileHashes is a line per Parquet file of snapshot m in dataDir: its
// name, SHA-256 and rows.
func fileHashes(t *testing.T, dataDir string, m *data.Manifest) []string {
	t.Helper()
	var lines []string
	for _, file := range snapshot.ParquetFiles {
		f, err := snapshot.Local(dataDir).Open(m.ID, file)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, f.Size())); err != nil {
			t.Fatal(err)
		}
		f.Close()
		lines = append(lines, fmt.Sprintf("%s/%s %x %d rows", m.ID, file, h.Sum(nil), m.Counts[file]))
	}
	return lines
}

// The same web recorded into a store of 1, 3 and 8 shards gives the same
// snapshot files, byte for byte, over two rebuilds (the second carries
// ranks, map and communities over): ids are assigned by name when the
// shards' parts are merged, so they cannot depend on K. The bytes are
// pinned in testdata/sharded-sha256.golden (-update rewrites it). So does
// a rebuild whose shards' views are sorted through many small runs on disk
// (rather than one chunk in memory each, as such small stores are).
func TestShardedSnapshotBytes(t *testing.T) {
	var first []string
	for _, c := range []struct {
		k         int
		sortChunk int
	}{{1, 0}, {3, 0}, {8, 0}, {3, 512}} {
		k := c.k
		dir := t.TempDir()
		s, err := shard.Open(filepath.Join(dir, "store"), shard.Options{Create: true, Shards: k, Platforms: []string{"github.io"}})
		if err != nil {
			t.Fatal(err)
		}
		fillWeb(t, s, 0)
		lines := snapshotHashes(t, s, dir, asOf, c.sortChunk)
		fillWeb(t, s, 1)
		lines = append(lines, snapshotHashes(t, s, dir, asOf.Add(day), c.sortChunk)...)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		left, _ := filepath.Glob(filepath.Join(dir, snapshot.DirName, ".tmp-*"))
		parts, _ := filepath.Glob(filepath.Join(dir, ".rebuild-parts-*"))
		if left = append(left, parts...); len(left) > 0 {
			t.Errorf("K=%d: the rebuild left %v", k, left)
		}
		if first == nil {
			first = lines
			continue
		}
		if !slices.Equal(lines, first) {
			t.Errorf("K=%d (sort chunk %d) gives other snapshot files than K=1:\n%s\nwant\n%s", k, c.sortChunk, strings.Join(lines, "\n"), strings.Join(first, "\n"))
		}
	}
	got := strings.Join(first, "\n") + "\n"
	checkGolden(t, "sharded-sha256.golden", got)
}

// Resharding 1→8→3 keeps the store's content: each reshard is checked by
// SameContent before it swaps, and the rebuilds of the three give the
// same snapshot files, byte for byte. The first reshard sorts the old
// shard through runs of a few domains each, the second in one chunk.
func TestReshardKeepsSnapshot(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	s, err := shard.Open(storeDir, shard.Options{Create: true, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	fillWeb(t, s, 0)
	want := snapshotHashes(t, s, t.TempDir(), asOf)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ k, sortChunk int }{{8, 512}, {3, 0}} {
		k := c.k
		res, err := shard.Reshard(storeDir, shard.ReshardOptions{Shards: k, Platforms: []string{"github.io"}, SortChunk: c.sortChunk,
			Verify: func(a, b *shard.Store, scratch string) error { return SameContent(t.Context(), a, b, scratch) }})
		if err != nil {
			t.Fatalf("reshard to %d: %v", k, err)
		}
		if err := os.RemoveAll(res.Old); err != nil {
			t.Fatal(err)
		}
		s, err := shard.Open(storeDir, shard.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if s.Shards() != k {
			t.Errorf("resharded to %d shards, opens with %d", k, s.Shards())
		}
		got := snapshotHashes(t, s, t.TempDir(), asOf)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("after resharding to %d the snapshot differs:\n%s\nwant\n%s", k, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".*")); len(left) > 0 {
		t.Errorf("reshard left %v", left)
	}
}

// Run reads a local store's shards straight from their views, sorted by
// name (here through runs on disk); a fleet exports them as parts
// (ExportPart) and merges those (RunParts). Both give the same snapshot
// files, byte for byte, for one shard and several.
// And a merge stream left early stops its walks and can be read again;
// once its edges are released, only its domains.
func TestLocalMergeMatchesParts(t *testing.T) {
	for _, k := range []int{1, 3} {
		dir := t.TempDir()
		s, err := shard.Open(filepath.Join(dir, "store"), shard.Options{Create: true, Shards: k, Platforms: []string{"github.io"}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		fillWeb(t, s, 0)
		fillWeb(t, s, 1)
		want := snapshotHashes(t, s, filepath.Join(dir, "local"), asOf)

		views, err := s.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		defer views.Close()
		parts := make([]*snapshot.Part, k)
		orders := make([]*graph.NameOrder, k)
		for i := range k {
			if parts[i], err = ExportPart(t.Context(), views.Shard(i), filepath.Join(dir, "parts", PartDir(i)), PartInfo{Shard: i, Shards: k, AsOf: asOf},
				graph.Spill{Dir: t.TempDir(), ChunkBytes: 512}); err != nil {
				t.Fatal(err)
			}
			if orders[i], err = views.Shard(i).LoadByName(graph.Spill{Dir: t.TempDir(), ChunkBytes: 512}); err != nil {
				t.Fatal(err)
			}
			defer orders[i].Close()
		}
		o := Options{DataDir: filepath.Join(dir, "parts-run"), Now: asOf, Tiers: testTiers}
		o.Rank.Workers = 2
		m, err := RunParts(t.Context(), parts, o)
		if err != nil {
			t.Fatal(err)
		}
		if got := fileHashes(t, o.DataDir, m); !slices.Equal(got, want) {
			t.Errorf("K=%d: a rebuild over parts gives other files than a local one:\n%s\nwant\n%s", k, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}

		local, err := localMerge(orders, graph.Spill{Dir: t.TempDir(), ChunkBytes: 512})
		if err != nil {
			t.Fatal(err)
		}
		stop := errors.New("enough")
		for range 2 {
			var n int
			err = local.Edges(func(*data.EdgeRecord) error {
				if n++; n == 10 {
					return stop
				}
				return nil
			})
			if !errors.Is(err, stop) {
				t.Errorf("K=%d: edges left early: %v", k, err)
			}
		}
		var edges int64
		if err := local.Edges(func(*data.EdgeRecord) error { edges++; return nil }); err != nil {
			t.Fatal(err)
		}
		if want := m.Counts[data.EdgesFile]; edges != want {
			t.Errorf("K=%d: %d edges after two passes left early, want %d", k, edges, want)
		}
		// Released, it still reads its domains, and refuses its edges.
		if err := local.ReleaseEdges(); err != nil {
			t.Fatal(err)
		}
		var domains int64
		if err := local.Domains(func(*data.DomainState) error { domains++; return nil }); err != nil || domains != m.Counts[data.DomainsFile] {
			t.Errorf("K=%d: %d domains after ReleaseEdges (%v), want %d", k, domains, err, m.Counts[data.DomainsFile])
		}
		if err := local.Edges(func(*data.EdgeRecord) error { return nil }); err == nil {
			t.Errorf("K=%d: edges read after ReleaseEdges", k)
		}
	}
}

// A store whose visits were recorded out of their start order (two
// writers) holds an edge first seen before its target: a reshard keeps the
// target's first seen as it was, rather than take the edge's where it
// makes the target anew, and so passes its check.
func TestReshardKeepsFirstSeen(t *testing.T) {
	dir := t.TempDir()
	storeDir := filepath.Join(dir, "store")
	r, err := shard.NewRouter(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	const target = "target.example"
	var early, late string // early's shard is not the target's
	for i := 0; early == "" || late == ""; i++ {
		n := fmt.Sprintf("linker%d.example", i)
		if early == "" && r.Of(n) != r.Of(target) {
			early = n
		} else if late == "" {
			late = n
		}
	}
	s, err := shard.Open(storeDir, shard.Options{Create: true, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []*data.VisitResult{okVisit(late, 1, target), okVisit(early, 2, target)} {
		if err := s.RecordVisits([]*data.VisitResult{v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = shard.Reshard(storeDir, shard.ReshardOptions{Shards: 2,
		Verify: func(a, b *shard.Store, scratch string) error { return SameContent(t.Context(), a, b, scratch) }})
	if err != nil {
		t.Fatal(err)
	}
}
