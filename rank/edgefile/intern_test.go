package edgefile

import (
	"fmt"
	"strings"
	"sync"
	"testing"
)

// internAll interns names on reader nm of t, in windows, and returns
// their ids.
func internAll(t testing.TB, tb *table, nm *names, names []string) []uint32 {
	ids := make([]uint32, len(names))
	for lo := 0; lo < len(names); lo += window {
		tb.enter()
		for i := lo; i < min(len(names), lo+window); i++ {
			// Pass a copy in a reused buffer: the table must own its copy.
			buf := []byte(names[i])
			id, err := tb.id(nm, string(buf), tb.hash(names[i]))
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = id
		}
		tb.exit(nm)
	}
	return ids
}

// TestTable: readers interning the same names at once (from a table far
// too small, so that it grows under them) agree on one id a name, and
// the names lists give each id its name.
func TestTable(t *testing.T) {
	var names []string
	for i := range 30_000 {
		// Short (inline) and long names, some sharing prefixes.
		n := fmt.Sprintf("d%d.com", i)
		if i%3 == 0 {
			n = strings.Repeat("long-", 1+i%7) + n
		}
		names = append(names, n)
	}
	const readers = 3
	tb := newTable(readers, 0, 0)
	got := make([][]uint32, readers)
	var wg sync.WaitGroup
	for w := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each reader in its own order (7919 is prime), twice.
			order := make([]string, len(names))
			for i := range names {
				order[i] = names[(i*7919+w*101)%len(names)]
			}
			internAll(t, tb, tb.readers[w], order)
			ids := internAll(t, tb, tb.readers[w], order)
			got[w] = make([]uint32, len(names))
			for i := range order {
				got[w][(i*7919+w*101)%len(names)] = ids[i]
			}
		}()
	}
	wg.Wait()
	lists := tb.lists()
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	if total != len(names) || tb.count() != int64(len(names)) {
		t.Fatalf("%d names (count %d), want %d", total, tb.count(), len(names))
	}
	for i, n := range names {
		id := got[0][i]
		for w := 1; w < readers; w++ {
			if got[w][i] != id {
				t.Fatalf("%q: id %d for reader 0, %d for reader %d", n, id, got[w][i], w)
			}
		}
		if s := lists[id%readers][id/readers]; s != n {
			t.Fatalf("id %d is %q, want %q", id, s, n)
		}
	}
	if tb.bytes() < int64(len(names))*32 {
		t.Errorf("%d bytes for %d names", tb.bytes(), len(names))
	}
}

func BenchmarkTable(b *testing.B) {
	names := make([]string, 1<<20)
	for i := range names {
		names[i] = fmt.Sprintf("d%d.com", i*7919%(1<<20))
	}
	for b.Loop() {
		tb := newTable(1, len(names)/8, 0)
		internAll(b, tb, tb.readers[0], names)
		internAll(b, tb, tb.readers[0], names)
	}
}
