package edgefile

import (
	"fmt"
	"strings"
	"testing"
)

func TestInterner(t *testing.T) {
	in := newInterner(0)
	want := map[string]uint32{}
	var names []string
	for i := range 50_000 {
		// Short (inline) and long names, some sharing prefixes.
		n := fmt.Sprintf("d%d.com", i)
		if i%3 == 0 {
			n = strings.Repeat("long-", 1+i%7) + n
		}
		names = append(names, n)
	}
	for round := range 2 {
		for _, n := range names {
			// Pass a copy in a reused buffer: the interner must own its copy.
			buf := []byte(n)
			id := in.id(string(buf))
			if round == 0 {
				if _, dup := want[n]; !dup {
					want[n] = id
				}
			}
			if want[n] != id {
				t.Fatalf("round %d: id(%q) = %d, want %d", round, n, id, want[n])
			}
		}
	}
	if in.len() != len(names) {
		t.Fatalf("len %d, want %d", in.len(), len(names))
	}
	for n, id := range want {
		if in.names[id] != n {
			t.Fatalf("names[%d] = %q, want %q", id, in.names[id], n)
		}
	}
	if id := in.id(""); in.names[id] != "" || in.id("") != id {
		t.Error("empty name")
	}
}

func BenchmarkInterner(b *testing.B) {
	names := make([]string, 1<<20)
	for i := range names {
		names[i] = fmt.Sprintf("d%d.com", i*7919%(1<<20))
	}
	for b.Loop() {
		in := newInterner(len(names) / 8)
		for _, n := range names {
			in.id(n)
		}
		for _, n := range names {
			in.id(n)
		}
	}
}
