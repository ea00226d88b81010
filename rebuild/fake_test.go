package rebuild

import (
	"github.com/mapthenet/mapthenet/data"
)

// fakeSource is a Source over slices: the tests build exact store contents
// without the store, and can make it misbehave.
type fakeSource struct {
	n       uint32
	domains []data.DomainState
	edges   []data.EdgeRecord
	visits  []data.VisitLogEntry
}

func (f *fakeSource) NumDomains() uint32 { return f.n }

func (f *fakeSource) Domains(fn func(*data.DomainState) error) error {
	for i := range f.domains {
		d := f.domains[i]
		if err := fn(&d); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeSource) Edges(fn func(*data.EdgeRecord) error) error {
	for i := range f.edges {
		e := f.edges[i]
		if err := fn(&e); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeSource) Visits(fn func(*data.VisitLogEntry) error) error {
	for i := range f.visits {
		v := f.visits[i]
		if err := fn(&v); err != nil {
			return err
		}
	}
	return nil
}

// LinkWords counts the words of the followed edges between listed
// domains, as a shard's export does.
func (f *fakeSource) LinkWords(fn func(dst uint32, word string, sites int64) error) error {
	known := map[uint32]bool{}
	for _, d := range f.domains {
		known[d.ID] = true
	}
	t := newLinkWordTally()
	for _, e := range f.edges {
		if !e.Nofollow && e.SrcID != e.DstID && known[e.SrcID] && known[e.DstID] {
			t.add(e.DstID, e.Words)
		}
	}
	return t.counts(fn)
}
