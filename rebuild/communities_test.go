package rebuild

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graphgen"
)

// communitiesOf reads the community column of snapshot id by domain
// (-1: null).
func communitiesOf(t *testing.T, dir, id string) map[string]int32 {
	t.Helper()
	s := mustOpen(t, dir, id)
	rows, err := s.Domains()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int32{}
	for _, r := range rows {
		m[r.Domain] = -1
		if r.Community != nil {
			m[r.Domain] = *r.Community
		}
	}
	return m
}

// TestRebuildCommunities: domains.parquet's community column finds
// graphgen's planted communities, leaves domains without a followed link
// empty, and keeps the ids when 1% more edges come in.
func TestRebuildCommunities(t *testing.T) {
	dir := t.TempDir()
	src := generatedSource(t)
	m1 := run1(t, dir, src, asOf)
	first := communitiesOf(t, dir, m1.ID)
	if !slices.ContainsFunc(m1.Stages, func(s data.StageTiming) bool { return s.Stage == "communities" }) {
		t.Errorf("manifest stages %v: no communities stage", m1.Stages)
	}

	gen, err := graphgen.New(graphgen.Config{Domains: 900, Edges: 6000, Seed: 5, Communities: 3})
	if err != nil {
		t.Fatal(err)
	}
	linked := map[string]bool{}
	for _, e := range src.edges {
		if !e.Nofollow {
			linked[gen.Name(e.SrcID)], linked[gen.Name(e.DstID)] = true, true
		}
	}
	// Each planted community is mostly one id, a different one each.
	votes := map[int]map[int32]int{}
	for id := range uint32(gen.Domains()) {
		name := gen.Name(id)
		c := first[name]
		if (c >= 0) != linked[name] {
			t.Fatalf("%s: community %d, followed links %v", name, c, linked[name])
		}
		if c >= 0 {
			p := gen.Community(id)
			if votes[p] == nil {
				votes[p] = map[int32]int{}
			}
			votes[p][c]++
		}
	}
	seen := map[int32]bool{}
	for p, v := range votes {
		best, total := int32(-1), 0
		for c, n := range v {
			total += n
			if best < 0 || n > v[best] || (n == v[best] && c < best) {
				best = c
			}
		}
		if v[best]*10 < total*8 || seen[best] {
			t.Errorf("planted community %d: its largest id %d has %d of %d members (or is another's)", p, best, v[best], total)
		}
		seen[best] = true
	}

	// 1% more edges, at random: ids stay for at least 95% of domains.
	r := rand.New(rand.NewPCG(7, 7))
	var extra [][2]uint32
	have := map[[2]uint32]bool{}
	for _, e := range src.edges {
		have[[2]uint32{e.SrcID, e.DstID}] = true
	}
	for len(extra) < len(src.edges)/100 {
		e := [2]uint32{uint32(r.IntN(gen.Domains())), uint32(r.IntN(gen.Domains()))}
		if e[0] != e[1] && !have[e] {
			have[e] = true
			extra = append(extra, e)
		}
	}
	m2 := run1(t, dir, generatedSource(t, extra...), asOf.Add(day))
	second := communitiesOf(t, dir, m2.ID)
	kept, assigned := 0, 0
	for name, c := range first {
		if c >= 0 {
			assigned++
			if second[name] == c {
				kept++
			}
		}
	}
	t.Logf("%d extra edges: %d of %d domains keep their community id", len(extra), kept, assigned)
	if kept*100 < assigned*95 {
		t.Errorf("%d of %d domains keep their community id, want at least 95%%", kept, assigned)
	}
}

func TestNameFinder(t *testing.T) {
	sorted := []string{"a.example", "b.example", "c.example", "d.example", "e.example", "f.example", "g.example"}
	shuffled := []string{"d.example", "a.example", "g.example", "c.example", "b.example", "f.example", "e.example"}
	for _, names := range [][]string{sorted, shuffled} {
		f := newNameFinder(names)
		// In order, out of order, missing names before, between and after.
		for _, q := range []string{"a.example", "c.example", "g.example", "b.example", "0.example", "cc.example", "z.example", "f.example", "a.example"} {
			want := int32(slices.Index(names, q))
			if got := f.index([]byte(q)); got != want {
				t.Errorf("%v: index(%s) = %d, want %d", names[:2], q, got, want)
			}
		}
	}
}
