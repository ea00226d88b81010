package rebuild

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/snapshot"
)

// exportOf records visits into a store of its own and exports it as part
// shard of shards, sorted through runs of a few domains each.
func exportOf(t *testing.T, dir string, shard, shards int, vs ...*data.VisitResult) *snapshot.Part {
	t.Helper()
	s, err := graph.Open("", graph.Options{Create: true, InMemory: true, RecordCache: -1, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RecordVisits(vs); err != nil {
		t.Fatal(err)
	}
	sn, err := s.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	defer sn.Close()
	p, err := ExportPart(t.Context(), sn, filepath.Join(dir, PartDir(shard)), PartInfo{Shard: shard, Shards: shards, AsOf: asOf},
		graph.Spill{Dir: t.TempDir(), ChunkBytes: 256})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func okVisit(name string, ago int, links ...string) *data.VisitResult {
	at := asOf.Add(-day * time.Duration(10+ago))
	v := &data.VisitResult{Domain: name, StartedAt: at, FinishedAt: at, RobotsReadAt: at, RobotsStatus: 200,
		Outcome: data.OutcomeOK, HTTPStatus: 200, Pages: 1, Complete: true}
	for _, l := range links {
		v.Links = append(v.Links, data.Link{Dst: l, Words: []string{"word"}})
	}
	return v
}

// A name known to several shards is one domain: the visited record's
// state, the earliest first seen; link-word counts add up.
func TestMergeCombines(t *testing.T) {
	dir := t.TempDir()
	p0 := exportOf(t, dir, 0, 2, okVisit("a.example", 2, "c.example"), okVisit("b.example", 1, "c.example"))
	p1 := exportOf(t, dir, 1, 2, okVisit("c.example", 0, "a.example"), okVisit("d.example", 3, "c.example"))
	m, err := OpenMerge([]*snapshot.Part{p0, p1})
	if err != nil {
		t.Fatal(err)
	}
	if m.NumDomains() != 4 {
		t.Errorf("%d domains, want 4", m.NumDomains())
	}
	var names []string
	states := map[string]data.DomainState{}
	if err := m.Domains(func(st *data.DomainState) error {
		names = append(names, st.Name)
		states[st.Name] = *st
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(names, " ") != "a.example b.example c.example d.example" {
		t.Errorf("names %v", names)
	}
	c := states["c.example"]
	// c.example's own shard made its record at its visit (d's earlier
	// visit was recorded after), shard 0 at a's: the earlier of the two.
	if c.ID != 2 || !c.Visited() || !c.FollowedIn || !c.FirstSeen.Equal(okVisit("a.example", 2).StartedAt) {
		t.Errorf("c.example merged as %+v: want id 2, its own visit, followed in, first seen by a's visit (the earliest record)", c)
	}
	var words []string
	if err := m.LinkWords(func(dst uint32, w string, n int64) error {
		words = append(words, names[dst]+":"+w+":"+string(rune('0'+n)))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(words, " ") != "a.example:word:1 c.example:word:3" {
		t.Errorf("link words %v: c.example's three linking domains are in two parts", words)
	}
}

func TestMergeRefuses(t *testing.T) {
	dir := t.TempDir()
	twice := []*snapshot.Part{
		exportOf(t, filepath.Join(dir, "a"), 0, 2, okVisit("a.example", 1, "b.example")),
		exportOf(t, filepath.Join(dir, "a"), 1, 2, okVisit("a.example", 2, "c.example")),
	}
	m, err := OpenMerge(twice)
	if err != nil {
		t.Fatal(err)
	}
	err = m.Edges(func(*data.EdgeRecord) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "out-links in shards 0 and 1") {
		t.Errorf("a domain with out-links in two shards: %v", err)
	}
	if _, err := OpenMerge([]*snapshot.Part{twice[1], twice[0]}); err == nil || !strings.Contains(err.Error(), "want shard 0 of 2") {
		t.Errorf("parts out of shard order: %v", err)
	}
	if _, err := OpenMerge(twice[:1]); err == nil {
		t.Error("one part of two merged")
	}
	// A part cut off before its part.json is not a part.
	cut := filepath.Join(dir, "cut")
	p := exportOf(t, cut, 0, 1, okVisit("a.example", 1))
	if err := os.Remove(filepath.Join(p.Dir, data.PartManifestFile)); err != nil {
		t.Fatal(err)
	}
	if _, err := snapshot.OpenPart(p.Dir); !errors.Is(err, snapshot.ErrPartIncomplete) {
		t.Errorf("a part without part.json: %v", err)
	}
	// A damaged file is an error naming it, never a panic.
	p = exportOf(t, filepath.Join(dir, "bad"), 0, 1, okVisit("a.example", 1, "b.example"))
	if err := os.WriteFile(filepath.Join(p.Dir, data.PartEdgesFile), []byte("PAR1 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err = OpenMerge([]*snapshot.Part{p})
	if err != nil {
		t.Fatal(err)
	}
	err = m.Edges(func(*data.EdgeRecord) error { return nil })
	if !errors.Is(err, snapshot.ErrNotParquet) || !strings.Contains(err.Error(), data.PartEdgesFile) {
		t.Errorf("a damaged edges file: %v", err)
	}
}

// namesInput is a part whose names pass and domains pass may disagree
// (a shard whose view changed, or a damaged one).
type namesInput struct{ list, states []string }

func (ni namesInput) String() string             { return "fake part" }
func (ni namesInput) domainCount() int64         { return int64(len(ni.list)) }
func (ni namesInput) countSource(n int64) string { return "" }
func (ni namesInput) names() (rowCursor[partName], error) {
	return feed(func(emit func(partName) error) error {
		for _, n := range ni.list {
			if err := emit(partName{Domain: n}); err != nil {
				return err
			}
		}
		return nil
	}), nil
}
func (ni namesInput) domains() (rowCursor[domainRecord], error) {
	return feed(func(emit func(domainRecord) error) error {
		for _, n := range ni.states {
			if err := emit(domainRecord{State: data.DomainState{Name: n}}); err != nil {
				return err
			}
		}
		return nil
	}), nil
}
func (ni namesInput) edges() (rowCursor[data.PartEdgeRow], error) { return nil, errors.New("no edges") }
func (ni namesInput) visits() (rowCursor[data.PartVisitRow], error) {
	return nil, errors.New("no visits")
}
func (ni namesInput) linkWords() (rowCursor[data.PartLinkWordRow], error) {
	return nil, errors.New("no link words")
}

// Each domain's state must name the domain its id was given for: the
// merge checks it against its name table (the local shards' views let
// their own names go once numbered).
func TestMergeChecksStateNames(t *testing.T) {
	for _, c := range []struct {
		states []string
		bad    bool
	}{
		{[]string{"a.example", "b.example"}, false},
		{[]string{"a.example", "c.example"}, true},
	} {
		m, err := newMerge([]mergeInput{namesInput{list: []string{"a.example", "b.example"}, states: c.states},
			namesInput{list: []string{"b.example"}, states: []string{"b.example"}}})
		if err != nil {
			t.Fatal(err)
		}
		err = m.Domains(func(*data.DomainState) error { return nil })
		if bad := err != nil && strings.Contains(err.Error(), `names "c.example", not "b.example"`); bad != c.bad || (err != nil && !bad) {
			t.Errorf("states %v: %v", c.states, err)
		}
	}
}
