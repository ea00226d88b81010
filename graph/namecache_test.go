package graph

import (
	"fmt"
	"testing"

	"github.com/mapthenet/mapthenet/data"
)

// TestNameCacheIDs checks that a domain keeps its one id whatever the name
// cache holds: all names (a fresh store, a reopened small one), some
// (a cache too small, which forgets names and reads the database) or none.
func TestNameCacheIDs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cache  int
		allIDs bool // after the reopen
	}{
		{"all names fit", 0, true},
		{"cache forgets", 4, false},
		{"no cache", -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, Options{NameCache: tc.cache})
			if err != nil {
				t.Fatal(err)
			}
			var links []data.Link
			for i := range 20 {
				links = append(links, link(fmt.Sprintf("d%d.example", i)))
			}
			must(t, s.RecordVisit(visit("src.example", t0, data.OutcomeOK, links...)))
			want := dumpStore(t, s)
			must(t, s.Close())

			s, err = Open(dir, Options{NameCache: tc.cache})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if s.allIDs != tc.allIDs {
				t.Errorf("allIDs %v after reopening, want %v", s.allIDs, tc.allIDs)
			}
			// The same links again, and each target visited: no name may
			// get a second id.
			must(t, s.RecordVisit(visit("src.example", t0.Add(1), data.OutcomeOK, links...)))
			for i := range 20 {
				must(t, s.RecordVisit(visit(fmt.Sprintf("d%d.example", i), t0.Add(2), data.OutcomeOK, link("src.example"))))
			}
			got := dumpStore(t, s)
			if got.N != want.N || len(got.Domains) != len(want.Domains) {
				t.Fatalf("%d domains (NumDomains %d) after revisits, want %d (%d)", len(got.Domains), got.N, len(want.Domains), want.N)
			}
			for i := range got.Domains {
				if got.Domains[i].ID != want.Domains[i].ID || got.Domains[i].Name != want.Domains[i].Name {
					t.Errorf("domain %d: %d %q, want %d %q", i, got.Domains[i].ID, got.Domains[i].Name, want.Domains[i].ID, want.Domains[i].Name)
				}
			}
		})
	}
}
