package graph

import (
	"errors"
	"reflect"
	"testing"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/domain"
)

// removalFixture: a↔b, c→b, b→d, visits of a, b and c.
func removalFixture(t *testing.T, s *Store) {
	t.Helper()
	must(t, s.RecordVisits([]*data.VisitResult{
		visit("a.example", t0, data.OutcomeOK, link("b.example"), link("c.example")),
		visit("b.example", t0, data.OutcomeOK, link("a.example"), link("d.example")),
		visit("b.example", t1, data.OutcomeOK, link("a.example"), link("d.example")),
		visit("c.example", t0, data.OutcomeOK, link("b.example")),
	}))
}

func TestRemoveDomain(t *testing.T) {
	s := openMem(t)
	removalFixture(t, s)
	must(t, s.RemoveDomain("b.example", "owner request", "dns-txt:abc", t1))

	d := dumpStore(t, s)
	names := map[uint32]string{}
	for _, st := range d.Domains {
		names[st.ID] = st.Name
		if st.Name == "b.example" {
			t.Errorf("b.example still has a state: %+v", st)
		}
	}
	for _, e := range d.Edges {
		if e.SrcID == 1 || e.DstID == 1 {
			t.Errorf("edge of b.example left: %+v", e)
		}
	}
	for _, v := range d.Visits {
		if v.DomainID == 1 {
			t.Errorf("visit of b.example left: %+v", v)
		}
	}
	if len(d.Edges) != 1 || names[d.Edges[0].SrcID] != "a.example" || names[d.Edges[0].DstID] != "c.example" {
		t.Errorf("edges left %+v, want a→c only", d.Edges)
	}
	if len(d.Visits) != 2 {
		t.Errorf("%d visits left, want 2", len(d.Visits))
	}
	if d.N != 4 {
		t.Errorf("NumDomains %d: ids are not reused, want 4", d.N)
	}
	want := []Removal{{Name: "b.example", Reason: "owner request", Proof: "dns-txt:abc", At: t1}}
	if got, err := s.Removals(); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Removals() = %+v, %v", got, err)
	}
	if !reflect.DeepEqual(d.Removals, want) {
		t.Errorf("snapshot removals %+v", d.Removals)
	}
	if gone, err := s.IsRemoved("b.example"); !gone || err != nil {
		t.Errorf("IsRemoved = %v, %v", gone, err)
	}
	if gone, _ := s.IsRemoved("a.example"); gone {
		t.Error("a.example reported removed")
	}
	if _, ok, _ := s.Domain("b.example"); ok {
		t.Error("Domain finds the removed domain")
	}

	// It never comes back.
	if err := s.RecordVisit(visit("b.example", t2, data.OutcomeOK)); !errors.Is(err, ErrRemoved) {
		t.Errorf("visit of removed domain: %v", err)
	}
	must(t, s.AddDomains([]string{"b.example"}, t2, true))
	must(t, s.RecordVisit(visit("a.example", t2, data.OutcomeOK, link("https://www.b.example/"))))
	if _, ok, _ := s.Domain("b.example"); ok {
		t.Error("the removed domain came back")
	}
	if e := edgesOf(t, s, "a.example"); len(e) != 0 {
		t.Errorf("a.example's edges %+v, want none", e)
	}

	// Twice: the first entry stays.
	must(t, s.RemoveDomain("b.example", "again", "", t2))
	if got, _ := s.Removals(); !reflect.DeepEqual(got, want) {
		t.Errorf("after a second removal %+v", got)
	}
	// A domain the store never knew goes on the list too.
	must(t, s.RemoveDomain("never.example", "pre-emptive", "file", t2))
	if gone, _ := s.IsRemoved("never.example"); !gone {
		t.Error("unknown domain not on the removal list")
	}
	if err := s.RemoveDomain("www.a.example", "", "", t2); !errors.Is(err, domain.ErrInvalidDomain) {
		t.Errorf("removing a non-registrable name: %v", err)
	}
}

// TestRemoveResumes: a removal cut off after its list entry was written is
// finished by the next Open.
func TestRemoveResumes(t *testing.T) {
	dir := t.TempDir()
	s := openDir(t, dir)
	removalFixture(t, s)
	// The first step of RemoveDomain alone, as if the process died next.
	r := Removal{Name: "b.example", Reason: "r", Proof: "p", At: t1}
	must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set(removedKey(r.Name), encodeRemoval(&r)) }))
	must(t, s.Close())

	s = openDir(t, dir)
	defer s.Close()
	if _, ok, _ := s.Domain("b.example"); ok {
		t.Error("interrupted removal not finished on Open")
	}
	for _, e := range dumpStore(t, s).Edges {
		if e.SrcID == 1 || e.DstID == 1 {
			t.Errorf("edge of b.example left: %+v", e)
		}
	}
}
