package rebuild

import (
	"cmp"
	"slices"
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
// Words are interned to uint32 and the counts keyed by target<<32|word, so
// memory grows with the distinct (target, word) pairs, not with strings.
type linkWordTally struct {
	ids    map[string]uint32
	words  []string
	counts map[uint64]uint32
}

func newLinkWordTally() *linkWordTally {
	return &linkWordTally{ids: map[string]uint32{}, counts: map[uint64]uint32{}}
}

func (t *linkWordTally) add(dst uint32, words []string) {
	for _, w := range words {
		id, ok := t.ids[w]
		if !ok {
			id = uint32(len(t.words))
			t.ids[w] = id
			t.words = append(t.words, w)
		}
		t.counts[uint64(dst)<<32|uint64(id)]++
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
	var kept []linkWord
	for k, n := range t.counts {
		if n >= minLinkWordSites {
			kept = append(kept, linkWord{dst: uint32(k >> 32), word: t.words[uint32(k)], sites: int64(n)})
		}
	}
	slices.SortFunc(kept, func(a, b linkWord) int {
		if c := cmp.Compare(a.dst, b.dst); c != 0 {
			return c
		}
		if c := cmp.Compare(b.sites, a.sites); c != 0 {
			return c
		}
		return cmp.Compare(a.word, b.word)
	})
	var out []linkWord
	perDst := 0
	for i, lw := range kept {
		if i == 0 || kept[i-1].dst != lw.dst {
			perDst = 0
		}
		if perDst++; perDst <= maxLinkWordsPerDomain {
			out = append(out, lw)
		}
	}
	return out
}
