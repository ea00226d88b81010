package rebuild

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
)

// Link words (DESIGN.md, "link_words.parquet"): per target domain, the
// anchor words used by at least minLinkWordSites distinct linking domains,
// the maxLinkWordsPerDomain most used (ties by word).
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
type linkWordTally struct {
	ids   map[string]uint32
	words []string
	uses  []uint64
}

func newLinkWordTally() *linkWordTally {
	return &linkWordTally{ids: map[string]uint32{}}
}

func (t *linkWordTally) add(dst uint32, words []string) {
	for _, w := range words {
		id, ok := t.ids[w]
		if !ok {
			id = uint32(len(t.words))
			t.ids[w] = id
			t.words = append(t.words, w)
		}
		t.uses = append(t.uses, uint64(dst)<<32|uint64(id))
	}
}

// linkWord is one kept (target, word, sites).
type linkWord struct {
	dst   uint32
	word  string
	sites int64
}

// top returns the kept words, ordered by target, then sites desc, then word.
func (t *linkWordTally) top() []linkWord {
	sortUses(t.uses)
	var out, cur []linkWord
	flush := func() {
		slices.SortFunc(cur, func(a, b linkWord) int {
			if c := cmp.Compare(b.sites, a.sites); c != 0 {
				return c
			}
			return cmp.Compare(a.word, b.word)
		})
		out = append(out, cur[:min(len(cur), maxLinkWordsPerDomain)]...)
		cur = cur[:0]
	}
	for i := 0; i < len(t.uses); {
		j := i + 1
		for j < len(t.uses) && t.uses[j] == t.uses[i] {
			j++
		}
		dst := uint32(t.uses[i] >> 32)
		if len(cur) > 0 && cur[0].dst != dst {
			flush()
		}
		if n := j - i; n >= minLinkWordSites {
			cur = append(cur, linkWord{dst: dst, word: t.words[uint32(t.uses[i])], sites: int64(n)})
		}
		i = j
	}
	flush()
	return out
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
