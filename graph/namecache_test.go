package graph

import (
	"fmt"
	"math/rand/v2"
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
			s, err := Open(dir, Options{Create: true, NameCache: tc.cache})
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

			s, err = Open(dir, Options{Create: true, NameCache: tc.cache})
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

// TestNameCacheHash: put and putKey agree, names are told apart, a full
// cache forgets some names and says so, a nil cache holds nothing.
func TestNameCacheHash(t *testing.T) {
	c := newNameCache(16)
	c.put("a.example", 1)
	c.putKey([]byte("b.example"), 2)
	for name, want := range map[string]uint32{"a.example": 1, "b.example": 2} {
		if id, ok := c.get(name); !ok || id != want {
			t.Errorf("get(%q) = %d, %v; want %d", name, id, ok, want)
		}
	}
	if _, ok := c.get("c.example"); ok {
		t.Error("an unknown name was found")
	}
	c.delete("a.example")
	if _, ok := c.get("a.example"); ok {
		t.Error("a deleted name was found")
	}
	forgot := false
	for i := range 40 {
		forgot = c.put(fmt.Sprintf("n%d.example", i), uint32(i)) || forgot
	}
	if !forgot || c.len() > 16 {
		t.Errorf("after 40 puts into 16: forgot %v, %d held", forgot, c.len())
	}
	if id, ok := c.get("n39.example"); !ok || id != 39 {
		t.Errorf("the newest name: %d, %v", id, ok)
	}
	var none *nameCache
	if none.put("x", 1) || none.len() != 0 {
		t.Error("a nil cache held a name")
	}
	if _, ok := none.get("x"); ok {
		t.Error("a nil cache found a name")
	}
}

// TestNameCacheModel runs random puts, deletes and lookups against a Go
// map, through table growth, wrap-around probes and backward-shift
// deletes; the cache must never answer wrong, and forgets only when full.
func TestNameCacheModel(t *testing.T) {
	for _, max := range []int{5, 100, 1 << 20} {
		rng := rand.New(rand.NewPCG(uint64(max), 9))
		c := newNameCache(max)
		model := map[string]uint32{}
		for step := range 20000 {
			name := fmt.Sprintf("d%d.example", rng.IntN(3000))
			switch rng.IntN(4) {
			case 0, 1:
				id := uint32(step)
				if c.put(name, id) {
					// Forgot some: keep in the model only what is left.
					for n := range model {
						if _, ok := c.get(n); !ok {
							delete(model, n)
						}
					}
				}
				model[name] = id
			case 2:
				c.delete(name)
				delete(model, name)
			}
			id, ok := c.get(name)
			want, wok := model[name]
			if ok != wok || id != want {
				t.Fatalf("max %d step %d: get(%q) = %d, %v; want %d, %v", max, step, name, id, ok, want, wok)
			}
			if c.len() != len(model) || c.len() > max {
				t.Fatalf("max %d step %d: %d held, model %d", max, step, c.len(), len(model))
			}
		}
		for n, want := range model {
			if id, ok := c.get(n); !ok || id != want {
				t.Fatalf("max %d: at the end get(%q) = %d, %v; want %d", max, n, id, ok, want)
			}
		}
	}
}
