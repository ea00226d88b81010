package rebuild

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/shard"
	"github.com/mapthenet/mapthenet/snapshot"
)

// exportWeb is a store of three shards holding both rounds of webVisits
// (seeds, a removal, failed visits, revisits), and its views.
func exportWeb(t *testing.T) *shard.Snapshot {
	t.Helper()
	s, err := shard.Open(filepath.Join(t.TempDir(), "store"), shard.Options{Create: true, Shards: 3, Platforms: []string{"github.io"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	fillWeb(t, s, 0)
	fillWeb(t, s, 1)
	views, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { views.Close() })
	return views
}

// partLines is a line per file of part p: its name, SHA-256 and rows
// (part.json: its counts, as the rest holds its creation time).
func partLines(t *testing.T, p *snapshot.Part) []string {
	t.Helper()
	lines := []string{fmt.Sprintf("shard %d: counts %v", p.Manifest.Shard, p.Manifest.Counts)}
	for _, file := range []string{data.PartDomainsFile, data.PartEdgesFile, data.PartVisitsFile, data.PartLinkWordsFile} {
		b, err := os.ReadFile(filepath.Join(p.Dir, file))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("shard %d: %s %x", p.Manifest.Shard, file, sha256.Sum256(b)))
	}
	return lines
}

// A shard's part is the same, byte for byte, whether its view is sorted in
// memory (as ExportPart did before it sorted through runs), in one chunk
// or through runs of a few domains each (hundreds of runs, its link-word
// counts spilled too), and the runs are gone when it ends. The bytes are
// pinned in testdata/part-sha256.golden, written by the export before it
// sorted through runs (-update rewrites it).
func TestExportPartSortedThroughRuns(t *testing.T) {
	views := exportWeb(t)
	var first []string
	for _, c := range []struct {
		name  string
		spill func(dir string) graph.Spill
	}{
		{"memory", func(string) graph.Spill { return graph.Spill{} }},
		{"one chunk", func(dir string) graph.Spill { return graph.Spill{Dir: dir} }},
		{"runs", func(dir string) graph.Spill { return graph.Spill{Dir: dir, ChunkBytes: 512} }},
	} {
		var lines []string
		for i := range views.Shards() {
			scratch := t.TempDir()
			p, err := ExportPart(t.Context(), views.Shard(i), filepath.Join(t.TempDir(), PartDir(i)),
				PartInfo{Shard: i, Shards: views.Shards(), AsOf: asOf}, c.spill(scratch))
			if err != nil {
				t.Fatalf("%s: shard %d: %v", c.name, i, err)
			}
			lines = append(lines, partLines(t, p)...)
			if left, _ := os.ReadDir(scratch); len(left) > 0 {
				t.Errorf("%s: shard %d: the export left %d files in its scratch directory", c.name, i, len(left))
			}
		}
		if first == nil {
			first = lines
			continue
		}
		if !slices.Equal(lines, first) {
			t.Errorf("sorted %s, the parts differ from those sorted in memory:\n%s\nwant\n%s", c.name, strings.Join(lines, "\n"), strings.Join(first, "\n"))
		}
	}
	checkGolden(t, "part-sha256.golden", strings.Join(first, "\n")+"\n")

	// Many runs, not one: what the case "runs" is for.
	scratch := t.TempDir()
	no, err := views.Shard(0).LoadByName(graph.Spill{Dir: scratch, ChunkBytes: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer no.Close()
	if runs := sortedRuns(t, scratch); len(runs) < 50 {
		t.Errorf("a chunk of 512 bytes sorted shard 0 into %d runs, want many", len(runs))
	}
}

// sortedRuns are the run files of the views sorted into scratch.
func sortedRuns(t *testing.T, scratch string) []string {
	t.Helper()
	runs, err := filepath.Glob(filepath.Join(scratch, "*.run"))
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

// A sorted run cut short or removed under the export is an error of the
// export, which leaves no part (no part.json), never a part with fewer
// rows.
func TestExportPartDamagedRun(t *testing.T) {
	views := exportWeb(t)
	for _, damage := range []string{"cut", "removed"} {
		scratch := t.TempDir()
		no, err := views.Shard(1).LoadByName(graph.Spill{Dir: scratch, ChunkBytes: 512})
		if err != nil {
			t.Fatal(err)
		}
		runs := sortedRuns(t, scratch)
		if len(runs) < 2 {
			t.Fatalf("%d runs", len(runs))
		}
		victim := runs[len(runs)/2]
		if damage == "cut" {
			b, err := os.ReadFile(victim)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(victim, b[:len(b)/2], 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.Remove(victim); err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), PartDir(1))
		pb, err := snapshot.CreatePart(dir)
		if err != nil {
			t.Fatal(err)
		}
		p, err := writePart(t.Context(), no, pb, PartInfo{Shard: 1, Shards: 3, AsOf: asOf}, graph.Spill{Dir: t.TempDir(), ChunkBytes: 512})
		pb.Abort()
		no.Close()
		if err == nil {
			t.Errorf("%s run: the export wrote a part of %v rows", damage, p.Manifest.Counts)
		}
		if _, err := snapshot.OpenPart(dir); err == nil {
			t.Errorf("%s run: the export left a part", damage)
		}
	}
}
