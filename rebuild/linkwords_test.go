package rebuild

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
)

// TestSortUses: the two-part sort of link-word uses sorts, whatever the
// spread of targets (one target, two, many).
func TestSortUses(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, targets := range []int{1, 2, 3, 1000} {
		uses := make([]uint64, 1<<17)
		for i := range uses {
			uses[i] = uint64(r.IntN(targets))<<32 | uint64(r.IntN(50))
		}
		want := slices.Clone(uses)
		slices.Sort(want)
		sortUses(uses)
		if !slices.Equal(uses, want) {
			t.Fatalf("%d targets: not sorted", targets)
		}
	}
}

func TestLinkWordTop(t *testing.T) {
	tl := newLinkWordTally()
	// Target 1: twelve words used by 3..14 sources, and one by 2.
	for w := range 12 {
		for range 3 + w {
			tl.add(1, []string{fmt.Sprintf("w%c", 'a'+w)})
		}
	}
	tl.add(1, []string{"rare"})
	tl.add(1, []string{"rare"})
	// Target 0: a tie on sites, broken by word.
	for range 3 {
		tl.add(0, []string{"zeta", "alpha"})
	}
	var got []string
	p := wordPicker{emit: func(lw linkWord) error {
		got = append(got, fmt.Sprintf("%d:%s:%d", lw.dst, lw.word, lw.sites))
		return nil
	}}
	if err := tl.counts(p.add); err != nil {
		t.Fatal(err)
	}
	if err := p.flush(); err != nil {
		t.Fatal(err)
	}
	want := "0:alpha:3 0:zeta:3 1:wl:14 1:wk:13 1:wj:12 1:wi:11 1:wh:10 1:wg:9 1:wf:8 1:we:7 1:wd:6 1:wc:5"
	if g := strings.Join(got, " "); g != want {
		t.Errorf("top:\n%s\nwant\n%s", g, want)
	}
}

// The tally counts uses across its chunks as one: each (target, word)
// once, in order, with its count; so does one that spills its uses to
// runs (and removes them once counted).
func TestLinkWordTallyChunks(t *testing.T) {
	t.Run("memory", func(t *testing.T) { checkTallyCounts(t, newLinkWordTally()) })
	t.Run("runs", func(t *testing.T) {
		dir := t.TempDir()
		tally := spillTally(dir, 800) // 100 uses a run
		checkTallyCounts(t, tally)
		if left, _ := os.ReadDir(dir); len(left) > 0 {
			t.Errorf("counted, the tally left %d runs", len(left))
		}
	})
}

func checkTallyCounts(t *testing.T, tally *linkWordTally) {
	want := map[string]int64{}
	r := rand.New(rand.NewPCG(3, 4))
	for range 5000 { // several chunks
		dst, w := uint32(r.IntN(40)), fmt.Sprint("w", r.IntN(30))
		if err := tally.add(dst, []string{w}); err != nil {
			t.Fatal(err)
		}
		want[fmt.Sprint(dst, " ", w)]++
	}
	if tally.spillDir != "" && len(tally.runs) < 10 {
		t.Errorf("%d runs, want many", len(tally.runs))
	}
	var prev string
	err := tally.counts(func(dst uint32, word string, n int64) error {
		key := fmt.Sprint(dst, " ", word)
		if prev != "" && fmt.Sprintf("%010d %s", dst, word) <= prev {
			t.Errorf("%s after %s", key, prev)
		}
		prev = fmt.Sprintf("%010d %s", dst, word)
		if want[key] != n {
			t.Errorf("%s: %d, want %d", key, n, want[key])
		}
		delete(want, key)
		return nil
	})
	if err != nil || len(want) > 0 {
		t.Errorf("err %v; not counted: %v", err, want)
	}
}
