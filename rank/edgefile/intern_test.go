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
	nms := tb.names()
	total := nms.Len()
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
		if s := nms.Name(id); s != n {
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

// TestNamesOf: names copied into parts come back by id (id i*parts+k is
// part k's i-th), empty and block-crossing ones too, also once
// reordered; a name longer than MaxNameLen is refused.
func TestNamesOf(t *testing.T) {
	var a, b []string
	for i := range 40_000 {
		a = append(a, fmt.Sprintf("a%d.%s.com", i, strings.Repeat("x", i%90)))
		b = append(b, fmt.Sprintf("b%d.org", i))
	}
	b = append(b, "")
	n, err := NamesOf(a, b)
	if err != nil {
		t.Fatal(err)
	}
	if n.Len() != len(a)+len(b) || n.Parts() != 2 || n.PartLen(1) != len(b) {
		t.Fatalf("%d names in %d parts", n.Len(), n.Parts())
	}
	var refs []NameRef
	for i := range b {
		if i < len(a) && n.Name(uint32(2*i)) != a[i] {
			t.Fatalf("id %d is %q, want %q", 2*i, n.Name(uint32(2*i)), a[i])
		}
		if n.Name(uint32(2*i+1)) != b[i] || n.PartName(1, i) != b[i] {
			t.Fatalf("id %d is %q, want %q", 2*i+1, n.Name(uint32(2*i+1)), b[i])
		}
		refs = append(refs, n.Ref(uint32(2*i+1)))
	}
	r := n.Reordered(refs)
	for i := range b {
		if r.Name(uint32(i)) != b[i] {
			t.Fatalf("reordered id %d is %q, want %q", i, r.Name(uint32(i)), b[i])
		}
	}
	if _, err := NamesOf([]string{strings.Repeat("x", MaxNameLen+1)}); err == nil {
		t.Error("a name of MaxNameLen+1 bytes: no error")
	}
}

// TestTableRefusesLongName: interning a name longer than MaxNameLen is
// an error, and the slot it claimed is free again.
func TestTableRefusesLongName(t *testing.T) {
	tb := newTable(1, 0, 0)
	long := strings.Repeat("y", MaxNameLen+1)
	tb.enter()
	_, err := tb.id(tb.readers[0], long, tb.hash(long))
	tb.exit(tb.readers[0])
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("err %v", err)
	}
	ids := internAll(t, tb, tb.readers[0], []string{"a.com", strings.Repeat("z", MaxNameLen)})
	if tb.names().Name(ids[1]) != strings.Repeat("z", MaxNameLen) {
		t.Error("a name of MaxNameLen bytes is not kept whole")
	}
}
