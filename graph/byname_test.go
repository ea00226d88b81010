package graph

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// eachByName walks sn's view in name order with every field, sorted in
// memory.
func eachByName(sn *Snapshot, fn func(*Named) error) error {
	no, err := sn.LoadByName(Spill{})
	if err != nil {
		return err
	}
	defer no.Close()
	return no.Each(NamedAll, fn)
}

// nameView is a view's content keyed by name, the way Each hands it out.
type nameView struct {
	Names  []string
	States map[string]data.DomainState // ID zeroed
	Edges  []string                    // "src>dst first last nofollow sitewide words"
	Visits []string                    // "domain started outcome pages"
}

func collectByName(t *testing.T, s *Store) nameView {
	t.Helper()
	sn, err := s.Snapshot()
	must(t, err)
	defer sn.Close()
	names, err := sn.Names()
	must(t, err)
	out := nameView{Names: names, States: map[string]data.DomainState{}}
	must(t, eachByName(sn, func(n *Named) error {
		if names[n.Index] != n.State.Name {
			return fmt.Errorf("index %d is %q in Names, %q in Each", n.Index, names[n.Index], n.State.Name)
		}
		st := n.State
		st.ID = 0
		out.States[st.Name] = st
		for i, e := range n.Edges {
			if i > 0 && e.Dst <= n.Edges[i-1].Dst {
				return fmt.Errorf("%s: edges out of order", st.Name)
			}
			out.Edges = append(out.Edges, fmt.Sprintf("%s>%s %d %d %v %v %v", st.Name, names[e.Dst],
				e.FirstSeen.UnixNano(), e.LastSeen.UnixNano(), e.Nofollow, e.Sitewide, e.Words))
		}
		for _, v := range n.Visits {
			e, err := DecodeVisit(n.State.ID, v)
			if err != nil {
				return err
			}
			out.Visits = append(out.Visits, fmt.Sprintf("%s %d %s %d", st.Name, e.StartedAt.UnixNano(), e.Outcome, e.Pages))
		}
		return nil
	}))
	return out
}

// fillSmall records visits that exercise every kind of record: new link
// targets, followed and nofollow links, a target visited later, a domain
// visited twice, a seed, a removal.
func fillSmall(t *testing.T, s *Store) {
	t.Helper()
	must(t, s.AddDomains([]string{"seed.test", "zeta.test"}, t0, true))
	nf := link("nofollow.test")
	nf.Nofollow = true
	must(t, s.RecordVisits([]*data.VisitResult{
		visit("zeta.test", t0, data.OutcomeOK, link("alpha.test", "news"), link("mid.test", "home", "news"), nf),
		visit("alpha.test", t0.Add(time.Hour), data.OutcomeOK, link("zeta.test"), link("gone.test")),
	}))
	must(t, s.RecordVisits([]*data.VisitResult{
		visit("mid.test", t0.Add(2*time.Hour), data.OutcomeTimeout),
		visit("zeta.test", t0.Add(3*time.Hour), data.OutcomePartial, link("beta.test", "shop")),
	}))
	must(t, s.RemoveDomain("gone.test", "asked", "dns", t0.Add(4*time.Hour)))
}

func TestNameOrderContent(t *testing.T) {
	s := openMem(t)
	fillSmall(t, s)
	got := collectByName(t, s)
	want := []string{"alpha.test", "beta.test", "mid.test", "nofollow.test", "seed.test", "zeta.test"}
	if !slices.Equal(got.Names, want) {
		t.Fatalf("names %v, want %v (sorted, the removed one left out)", got.Names, want)
	}
	// The same content as the id-ordered readers.
	d := dumpStore(t, s)
	names := map[uint32]string{}
	for _, st := range d.Domains {
		names[st.ID] = st.Name
		g := got.States[st.Name]
		st.ID = 0
		if !reflect.DeepEqual(g, st) {
			t.Errorf("%s: Each state %+v, Domains %+v", st.Name, g, st)
		}
	}
	var edges, visits []string
	for _, e := range d.Edges {
		edges = append(edges, fmt.Sprintf("%s>%s %d %d %v %v %v", names[e.SrcID], names[e.DstID],
			e.FirstSeen.UnixNano(), e.LastSeen.UnixNano(), e.Nofollow, e.Sitewide, e.Words))
	}
	for _, v := range d.Visits {
		visits = append(visits, fmt.Sprintf("%s %d %s %d", names[v.DomainID], v.StartedAt.UnixNano(), v.Outcome, v.Pages))
	}
	slices.Sort(edges)
	slices.Sort(visits)
	if !slices.Equal(got.Edges, edges) {
		t.Errorf("Each edges\n%v\nwant\n%v", got.Edges, edges)
	}
	if !slices.Equal(got.Visits, visits) {
		t.Errorf("Each visits\n%v\nwant\n%v", got.Visits, visits)
	}
	if !got.States["mid.test"].FollowedIn || got.States["nofollow.test"].FollowedIn {
		t.Errorf("FollowedIn: mid.test %v (want true), nofollow.test %v (want false)",
			got.States["mid.test"].FollowedIn, got.States["nofollow.test"].FollowedIn)
	}
}

// A loaded view walks as often as asked, after its view is closed, each
// walk the same as one of every field (in memory) in the fields it asks for and empty in the
// others: in memory, and sorted through run files (one chunk, and a run
// per few domains), whose Close removes them.
func TestNameOrderEach(t *testing.T) {
	s := openMem(t)
	fillSmall(t, s)
	var all []Named
	sn, err := s.Snapshot()
	must(t, err)
	defer sn.Close()
	must(t, eachByName(sn, func(n *Named) error {
		c := *n
		c.Edges, c.Visits = slices.Clone(n.Edges), slices.Clone(n.Visits)
		for i, v := range c.Visits {
			c.Visits[i].Value = slices.Clone(v.Value)
		}
		all = append(all, c)
		return nil
	}))
	for _, c := range []struct {
		name  string
		spill Spill
		runs  bool
	}{
		{"memory", Spill{}, false},
		{"one chunk", Spill{Dir: t.TempDir()}, false},
		{"runs", Spill{Dir: t.TempDir(), ChunkBytes: 200}, true},
	} {
		t.Run(c.name, func(t *testing.T) { checkNameOrder(t, sn, c.spill, c.runs, all) })
	}
}

func checkNameOrder(t *testing.T, sn *Snapshot, sp Spill, runs bool, all []Named) {
	no, err := sn.LoadByName(sp)
	must(t, err)
	if sp.Dir != "" {
		files, _ := os.ReadDir(sp.Dir)
		if (len(files) > 1) != runs {
			t.Errorf("%d run files, want more than one: %v", len(files), runs)
		}
		defer func() {
			must(t, no.Close())
			if files, _ := os.ReadDir(sp.Dir); len(files) > 0 {
				t.Errorf("Close left %d run files", len(files))
			}
		}()
	}
	if no.Len() != len(all) {
		t.Fatalf("Len %d, a walk of every field walks %d", no.Len(), len(all))
	}
	check := func(fields NamedFields) {
		t.Helper()
		var i int
		must(t, no.Each(fields, func(n *Named) error {
			want := all[i]
			i++
			if fields&NamedState == 0 {
				name := want.State.Name
				want.State = data.DomainState{}
				if fields&NamedName != 0 {
					want.State = data.DomainState{ID: n.State.ID, Name: name}
				}
			}
			if fields&NamedEdges == 0 {
				want.Edges = nil
			}
			if fields&NamedVisits == 0 {
				want.Visits = nil
			}
			if n.Index != want.Index || !reflect.DeepEqual(n.State, want.State) || len(n.Edges) != len(want.Edges) ||
				len(n.Visits) != len(want.Visits) || len(n.Edges) > 0 && !reflect.DeepEqual(n.Edges, want.Edges) ||
				len(n.Visits) > 0 && !reflect.DeepEqual(n.Visits, want.Visits) {
				return fmt.Errorf("fields %b, row %d: %+v, want %+v", fields, n.Index, *n, want)
			}
			return nil
		}))
		if i != len(all) {
			t.Errorf("fields %b: %d rows, want %d", fields, i, len(all))
		}
	}
	for _, fields := range []NamedFields{NamedAll, NamedState, NamedName, NamedEdges, NamedVisits, NamedEdges | NamedName} {
		check(fields)
	}
	// Kept to its states, the view walks them as before, and refuses a
	// walk of what it let go.
	must(t, no.KeepStates())
	check(NamedState)
	check(NamedName)
	for _, fields := range []NamedFields{NamedEdges, NamedVisits, NamedAll} {
		if err := no.Each(fields, func(*Named) error { return nil }); !errors.Is(err, errStatesOnly) {
			t.Errorf("fields %b after KeepStates: %v", fields, err)
		}
	}
	// With its names let go, it walks the states still, and refuses the
	// names.
	no.DropNames()
	check(NamedState)
	if err := no.Each(NamedName, func(*Named) error { return nil }); !errors.Is(err, errNoNames) {
		t.Errorf("names after DropNames: %v", err)
	}
	if names := no.Names(); names != nil {
		t.Errorf("Names after DropNames: %d names", len(names))
	}
}

// Import of every domain a walk in name order lists makes a store whose view is the same
// (ids aside), removal list included.
func TestImportRoundTrip(t *testing.T) {
	src := openMem(t)
	fillSmall(t, src)
	want := collectByName(t, src)

	sn, err := src.Snapshot()
	must(t, err)
	defer sn.Close()
	names, err := sn.Names()
	must(t, err)
	var ds []ImportDomain
	must(t, eachByName(sn, func(n *Named) error {
		d := ImportDomain{State: n.State}
		for _, e := range n.Edges {
			d.Edges = append(d.Edges, ImportEdge{Dst: names[e.Dst], FirstSeen: e.FirstSeen, LastSeen: e.LastSeen,
				Nofollow: e.Nofollow, Sitewide: e.Sitewide, Words: e.Words})
		}
		for _, v := range n.Visits {
			d.Visits = append(d.Visits, RawVisit{StartedAt: v.StartedAt, Value: slices.Clone(v.Value)})
		}
		ds = append(ds, d)
		return nil
	}))
	var rs []Removal
	must(t, sn.Removed(func(r Removal) error { rs = append(rs, r); return nil }))

	dst := openMem(t)
	must(t, dst.ImportRemovals(rs))
	// In reverse, so that targets are created by edges before their own
	// records come: the result must not depend on the order.
	slices.Reverse(ds)
	must(t, dst.Import(ds[:2]))
	must(t, dst.Import(ds[2:]))
	got := collectByName(t, dst)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("imported view\n%+v\nwant\n%+v", got, want)
	}
	if removed, err := dst.IsRemoved("gone.test"); err != nil || !removed {
		t.Errorf("the removal list did not come along: %v %v", removed, err)
	}
	if err := dst.Import([]ImportDomain{{State: data.DomainState{Name: "gone.test"}}}); !errors.Is(err, ErrRemoved) {
		t.Errorf("import of a removed domain: %v, want ErrRemoved", err)
	}
}

func TestFence(t *testing.T) {
	s := openMem(t)
	must(t, s.RecordVisit(visit("a.test", t0, data.OutcomeOK, link("b.test"))))
	lost := errors.New("shard 3 moved to node b")
	s.SetFence(func() error { return lost })
	for name, err := range map[string]error{
		"visits":  s.RecordVisit(visit("c.test", t0, data.OutcomeOK, link("d.test"))),
		"domains": s.AddDomains([]string{"e.test"}, t0, true),
		"removal": s.RemoveDomain("a.test", "x", "y", t0),
		"meta":    s.SetOwnerToken(7),
	} {
		if !errors.Is(err, ErrFenced) || !errors.Is(err, lost) {
			t.Errorf("%s under a refusing fence: %v, want ErrFenced wrapping the fence's error", name, err)
		}
	}
	for _, n := range []string{"c.test", "d.test", "e.test"} {
		if _, ok, _ := s.Domain(n); ok {
			t.Errorf("%s was written through the fence", n)
		}
	}
	s.SetFence(func() error { return nil })
	must(t, s.SetOwnerToken(7))
	if tok, ok, err := s.OwnerToken(); err != nil || !ok || tok != 7 {
		t.Errorf("owner token %d %v %v, want 7", tok, ok, err)
	}
	s.SetFence(nil)
	must(t, s.RecordVisit(visit("c.test", t0, data.OutcomeOK)))
}

// A read-only or closed store whose fence refuses refuses a write with the
// fence's error, not ErrReadOnly or ErrClosed: a fleet node keeps the
// shards it does not hold open read-only, and the crawl drops a write the
// fence refused (the shard's owner makes the visit) where it stops on a
// store that cannot write.
func TestFenceBeforeReadOnly(t *testing.T) {
	dir := t.TempDir()
	must(t, openDir(t, dir).Close())
	ro, err := Open(dir, Options{ReadOnly: true})
	must(t, err)
	closed := openDir(t, t.TempDir())
	must(t, closed.Close())
	lost := errors.New("shard 3 is not held")
	for name, s := range map[string]*Store{"read-only": ro, "closed": closed} {
		s.SetFence(func() error { return lost })
		for op, err := range map[string]error{
			"visits":  s.RecordVisit(visit("c.test", t0, data.OutcomeOK)),
			"domains": s.AddDomains([]string{"e.test"}, t0, true),
			"meta":    s.SetOwnerToken(7),
		} {
			if !errors.Is(err, ErrFenced) || !errors.Is(err, lost) {
				t.Errorf("%s store, %s under a refusing fence: %v, want ErrFenced wrapping the fence's error", name, op, err)
			}
		}
		s.SetFence(func() error { return nil })
		want := map[string]error{"read-only": ErrReadOnly, "closed": ErrClosed}[name]
		if err := s.AddDomains([]string{"e.test"}, t0, true); !errors.Is(err, want) {
			t.Errorf("%s store under a passing fence: %v, want %v", name, err, want)
		}
	}
	must(t, ro.Close())
}

// Two records of one name (a domain's own and a reference to it, from two
// shards) import as the rebuild merges them, in either order.
func TestImportMergesRecords(t *testing.T) {
	visited := data.DomainState{Name: "a.test", FirstSeen: t0.Add(time.Hour), LastVisit: t0.Add(2 * time.Hour),
		LastOutcome: data.OutcomeOK, LastStatus: 200, Seeded: true}
	ref := data.DomainState{Name: "a.test", FirstSeen: t0, FollowedIn: true}
	edges := []ImportEdge{{Dst: "b.test", FirstSeen: t0, LastSeen: t0.Add(time.Hour)}}
	for _, order := range [][]ImportDomain{
		{{State: visited, Edges: edges}, {State: ref}},
		{{State: ref}, {State: visited, Edges: edges}},
	} {
		s := openMem(t)
		must(t, s.Import(order[:1]))
		must(t, s.Import(order[1:]))
		got := stateOf(t, s, "a.test")
		want := visited
		want.ID, want.FirstSeen, want.FollowedIn = got.ID, t0, true
		if !reflect.DeepEqual(got, want) {
			t.Errorf("merged %+v, want %+v", got, want)
		}
		if len(edgesOf(t, s, "a.test")) != 1 {
			t.Errorf("the edges of a.test were lost")
		}
		if err := s.Import([]ImportDomain{{State: visited, Edges: edges}}); err == nil {
			t.Error("a second record with out-edges was merged")
		}
	}
}

// A target the store does not know takes the edge's DstFirstSeen, or
// the edge's FirstSeen without one; a known target keeps its own.
func TestImportTargetFirstSeen(t *testing.T) {
	s := openMem(t)
	must(t, s.Import([]ImportDomain{
		{State: data.DomainState{Name: "a.test", FirstSeen: t0}, Edges: []ImportEdge{
			{Dst: "given.test", FirstSeen: t0, LastSeen: t0, DstFirstSeen: t0.Add(time.Hour)},
			{Dst: "edge.test", FirstSeen: t0.Add(2 * time.Hour), LastSeen: t0.Add(2 * time.Hour)},
		}},
		{State: data.DomainState{Name: "b.test", FirstSeen: t0}, Edges: []ImportEdge{
			{Dst: "given.test", FirstSeen: t0, LastSeen: t0, DstFirstSeen: t0.Add(-time.Hour)},
		}},
	}))
	for name, want := range map[string]time.Time{"given.test": t0.Add(time.Hour), "edge.test": t0.Add(2 * time.Hour)} {
		if got := stateOf(t, s, name).FirstSeen; !got.Equal(want) {
			t.Errorf("%s first seen %v, want %v", name, got, want)
		}
	}
}

// A sorted run cut short or removed under a loaded view is an error of
// the walk, never a shorter walk.
func TestNameOrderDamagedRun(t *testing.T) {
	s := openMem(t)
	fillSmall(t, s)
	sn, err := s.Snapshot()
	must(t, err)
	defer sn.Close()
	for _, damage := range []string{"cut", "removed"} {
		dir := t.TempDir()
		no, err := sn.LoadByName(Spill{Dir: dir, ChunkBytes: 200})
		must(t, err)
		runs, _ := filepath.Glob(filepath.Join(dir, "*.run"))
		if len(runs) < 2 {
			t.Fatalf("%d runs", len(runs))
		}
		if damage == "cut" {
			b, err := os.ReadFile(runs[0])
			must(t, err)
			must(t, os.WriteFile(runs[0], b[:len(b)/2], 0o644))
		} else {
			must(t, os.Remove(runs[0]))
		}
		err = no.Each(NamedAll, func(*Named) error { return nil })
		if !errors.Is(err, errBadRun) && !errors.Is(err, errCorrupt) && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s run: walk error %v", damage, err)
		}
		no.Close()
	}
}
