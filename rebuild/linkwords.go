package rebuild

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"

	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/internal/kway"
	"github.com/mapthenet/mapthenet/internal/runfile"
)

// Link words (DESIGN.md, "link_words.parquet"): per target domain, the
// anchor words used by at least minLinkWordSites distinct linking domains,
// the maxLinkWordsPerDomain most used (ties by word).
//
// Counting is split as the rebuild is: each shard's export counts, per
// (target, word), its own linking domains (linkWordTally, into the part's
// link_words file); the merge sums the shards' counts, whose linking
// domains are disjoint (a domain's links are in its own shard), and the
// builder keeps the top words of each target from that stream
// (wordPicker).
const (
	minLinkWordSites      = 3
	maxLinkWordsPerDomain = 10
)

// linkWordTally counts, per (target, word), the distinct linking domains
// that used the word. Each stored edge is one distinct (src, dst) pair whose
// words are distinct, so counting edges counts linking domains.
// Only followed edges count: nofollow links (ugc, sponsored, paid) are the
// ones spammers place, and they count towards nothing else either.
//
// Words are interned to uint32 and each use is kept as one packed
// target<<32|word in a slice, sorted and counted at the end: 8 bytes per
// (edge, word), a third of what a hash map of counts costs per entry at the
// sizes that matter (hundreds of millions of uses), and it never rehashes.
// The uses are gathered in chunks, joined once when counted: a slice grown
// by append copies the whole of it again every quarter more (it was a
// tenth of the edges stage's CPU time at graphgen M).
//
// That is still 8 bytes per (edge, word) of a shard: a tally given a
// scratch directory (spillTally) bounds it instead, writing its uses, once
// it holds a chunk of them, as a sorted run of counted (target, word)
// pairs, which counts merges.
type linkWordTally struct {
	ids   map[string]uint32
	words []string
	full  [][]uint64 // filled chunks of uses, before uses
	uses  []uint64
	held  int // uses in full and uses

	spillDir  string // "": every use in memory
	spillUses int    // the uses held before they are written as a run
	runs      []string
}

// useChunk is the most uses a chunk holds: chunks start small and double
// up to it, so that a small shard's tally costs little.
const useChunk = 1 << 20

func newLinkWordTally() *linkWordTally {
	return &linkWordTally{ids: map[string]uint32{}}
}

// spillTally is a tally that holds at most chunkBytes of uses in memory,
// the rest in runs in dir (removed once counted).
func spillTally(dir string, chunkBytes int) *linkWordTally {
	t := newLinkWordTally()
	t.spillDir, t.spillUses = dir, max(1, chunkBytes/8)
	return t
}

// tallyFor is the tally of a walk of a view sorted as sp says: spilling
// to runs in the view's scratch directory when it has one (a shard's uses
// are 8 bytes per followed edge and word: they would grow with the store),
// with the view's chunk.
func tallyFor(sp graph.Spill) *linkWordTally {
	if sp.Dir == "" {
		return newLinkWordTally()
	}
	return spillTally(sp.Dir, cmp.Or(sp.ChunkBytes, graph.DefaultSpillChunk))
}

func (t *linkWordTally) add(dst uint32, words []string) error {
	for _, w := range words {
		id, ok := t.ids[w]
		if !ok {
			id = uint32(len(t.words))
			t.ids[w] = id
			t.words = append(t.words, w)
		}
		if len(t.uses) == cap(t.uses) {
			if cap(t.uses) > 0 {
				t.full = append(t.full, t.uses)
			}
			t.uses = make([]uint64, 0, min(max(1024, 2*cap(t.uses)), useChunk))
		}
		t.uses = append(t.uses, uint64(dst)<<32|uint64(id))
		if t.held++; t.spillDir != "" && t.held >= t.spillUses {
			if err := t.spill(); err != nil {
				return err
			}
		}
	}
	return nil
}

// joined is every use held, in one slice (the chunks let go).
func (t *linkWordTally) joined() []uint64 {
	if len(t.full) > 0 {
		all := make([]uint64, 0, t.held)
		for _, c := range t.full {
			all = append(all, c...)
		}
		t.uses, t.full = append(all, t.uses...), nil
	}
	return t.uses
}

// spill writes the uses held as a run (runfile; writeUses says how).
func (t *linkWordTally) spill() error {
	uses := t.joined()
	sortUses(uses)
	w, err := runfile.Create(t.spillDir, "linkwords-*.run")
	if err != nil {
		return fmt.Errorf("link words: %w", err)
	}
	t.runs = append(t.runs, w.Name())
	if err := writeUses(w, uses); err != nil {
		w.Close()
		return fmt.Errorf("link words: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("link words: %w", err)
	}
	t.uses, t.held = t.uses[:0], 0
	return nil
}

// writeUses writes each distinct (target, word id) of uses, sorted, with
// its count, as uvarints (the key's difference from the one before, the
// count).
func writeUses(w io.Writer, uses []uint64) error {
	var buf []byte
	var prev uint64
	for i := 0; i < len(uses); {
		j := i + 1
		for j < len(uses) && uses[j] == uses[i] {
			j++
		}
		buf = binary.AppendUvarint(buf, uses[i]-prev)
		buf = binary.AppendUvarint(buf, uint64(j-i))
		prev = uses[i]
		if len(buf) >= 64<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
		i = j
	}
	_, err := w.Write(buf)
	return err
}

// counts calls fn with each (target, word, distinct linking domains), in
// (target, word) order, words in byte order.
func (t *linkWordTally) counts(fn func(dst uint32, word string, n int64) error) error {
	if len(t.runs) > 0 {
		return t.countRuns(fn)
	}
	t.joined()
	// Word ids renumbered in word order, so that the packed uses sort by
	// (target, word).
	order := make([]uint32, len(t.words))
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int { return cmp.Compare(t.words[a], t.words[b]) })
	rank := make([]uint32, len(t.words))
	for r, id := range order {
		rank[id] = uint32(r)
	}
	for i, u := range t.uses {
		t.uses[i] = u>>32<<32 | uint64(rank[uint32(u)])
	}
	sortUses(t.uses)
	for i := 0; i < len(t.uses); {
		j := i + 1
		for j < len(t.uses) && t.uses[j] == t.uses[i] {
			j++
		}
		if err := fn(uint32(t.uses[i]>>32), t.words[order[uint32(t.uses[i])]], int64(j-i)); err != nil {
			return err
		}
		i = j
	}
	return nil
}

// linkWord is one kept (target, word, sites).
type linkWord struct {
	dst   uint32
	word  string
	sites int64
}

// wordPicker keeps the top words of each target from a stream of
// (target, word, sites) in target order: those with minLinkWordSites or
// more, the maxLinkWordsPerDomain with the most sites, ties by word,
// handed to emit as each target ends. Memory: one target's words (the
// kept words of every target, 6.7M at L, are written as they come).
type wordPicker struct {
	emit func(linkWord) error
	cur  []linkWord
}

func (p *wordPicker) add(dst uint32, word string, sites int64) error {
	if len(p.cur) > 0 && p.cur[0].dst != dst {
		if err := p.flush(); err != nil {
			return err
		}
	}
	if sites >= minLinkWordSites {
		p.cur = append(p.cur, linkWord{dst: dst, word: word, sites: sites})
	}
	return nil
}

// flush emits the current target's kept words, ordered by sites desc,
// then word.
func (p *wordPicker) flush() error {
	slices.SortFunc(p.cur, func(a, b linkWord) int {
		if c := cmp.Compare(b.sites, a.sites); c != 0 {
			return c
		}
		return cmp.Compare(a.word, b.word)
	})
	for _, lw := range p.cur[:min(len(p.cur), maxLinkWordsPerDomain)] {
		if err := p.emit(lw); err != nil {
			return err
		}
	}
	p.cur = p.cur[:0]
	return nil
}

// sortUses sorts the packed uses, on two cores where there are: split at
// the middle target (one pass), then the halves sorted at once. Sorting is
// most of this stage's time (hundreds of millions of uses at the sizes
// that matter).
func sortUses(uses []uint64) {
	if len(uses) < 1<<16 || runtime.GOMAXPROCS(0) < 2 {
		slices.Sort(uses)
		return
	}
	lo, hi := uses[0]>>32, uses[0]>>32
	for _, u := range uses {
		lo, hi = min(lo, u>>32), max(hi, u>>32)
	}
	pivot := (lo + (hi-lo)/2 + 1) << 32 // below: the first part
	i, j := 0, len(uses)-1
	for {
		for i <= j && uses[i] < pivot {
			i++
		}
		for i <= j && uses[j] >= pivot {
			j--
		}
		if i > j {
			break
		}
		uses[i], uses[j] = uses[j], uses[i]
	}
	var wg sync.WaitGroup
	wg.Go(func() { slices.Sort(uses[:i]) })
	slices.Sort(uses[i:])
	wg.Wait()
}

// countRuns is counts of a tally that spilled: its runs merged (and then
// removed), the counts of a (target, word) summed across them, each
// target's words put in word order.
func (t *linkWordTally) countRuns(fn func(dst uint32, word string, n int64) error) error {
	defer func() {
		for _, r := range t.runs {
			os.Remove(r)
		}
		t.runs = nil
	}()
	if t.held > 0 {
		if err := t.spill(); err != nil {
			return err
		}
	}
	type run struct {
		r   *runfile.Reader
		key uint64
		n   uint64
	}
	runs := make([]*run, 0, len(t.runs))
	defer func() {
		for _, r := range runs {
			r.r.Close()
		}
	}()
	next := func(r *run) (bool, error) {
		d, err := binary.ReadUvarint(r.r)
		if err == io.EOF {
			return false, nil
		}
		if err == nil {
			r.n, err = binary.ReadUvarint(r.r)
		}
		if err != nil {
			return false, fmt.Errorf("link words: run %s: %w", r.r.Name(), err)
		}
		r.key += d
		return true, nil
	}
	h := kway.New(func(a, b int) bool { return runs[a].key < runs[b].key })
	for _, path := range t.runs {
		rr, err := runfile.Open(path)
		if err != nil {
			return fmt.Errorf("link words: %w", err)
		}
		r := &run{r: rr}
		runs = append(runs, r)
		ok, err := next(r)
		if err != nil {
			return err
		}
		if ok {
			h.Add(len(runs) - 1)
		}
	}
	type wordCount struct {
		word uint32
		n    int64
	}
	var group []wordCount // one target's words
	var dst uint32
	flush := func() error {
		slices.SortFunc(group, func(a, b wordCount) int { return cmp.Compare(t.words[a.word], t.words[b.word]) })
		for _, g := range group {
			if err := fn(dst, t.words[g.word], g.n); err != nil {
				return err
			}
		}
		group = group[:0]
		return nil
	}
	for h.Len() > 0 {
		key := runs[h.Top()].key
		var n int64
		for h.Len() > 0 && runs[h.Top()].key == key {
			r := runs[h.Top()]
			n += int64(r.n)
			ok, err := next(r)
			if err != nil {
				return err
			}
			h.Advanced(ok)
		}
		if len(group) > 0 && uint32(key>>32) != dst {
			if err := flush(); err != nil {
				return err
			}
		}
		dst = uint32(key >> 32)
		if uint32(key) >= uint32(len(t.words)) {
			return fmt.Errorf("link words: a run names word %d of %d", uint32(key), len(t.words))
		}
		group = append(group, wordCount{word: uint32(key), n: n})
	}
	return flush()
}
