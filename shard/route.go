package shard

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cespare/xxhash/v2"
)

// Router says which shard a domain lives in: the shard of its pace key
// (Of). It is fixed when a store is made and recorded in it (Layout).
type Router struct {
	shards    int
	platforms []string // suffixes, longest first
}

// NewRouter routes over shards shards, keeping every site of each platform
// suffix in one shard. shards must be between 1 and MaxShards.
func NewRouter(shards int, platforms []string) (Router, error) {
	if shards < 1 || shards > MaxShards {
		return Router{}, fmt.Errorf("shard: %d shards: want 1 to %d", shards, MaxShards)
	}
	ps := make([]string, 0, len(platforms))
	for _, p := range platforms {
		p = strings.ToLower(strings.Trim(p, "."))
		if p == "" {
			return Router{}, fmt.Errorf("shard: an empty platform suffix")
		}
		if !slices.Contains(ps, p) {
			ps = append(ps, p)
		}
	}
	// Longest first: a domain under two configured suffixes takes the
	// longer, whatever the order they were given in.
	slices.SortFunc(ps, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	return Router{shards: shards, platforms: ps}, nil
}

// MaxShards bounds K: shard directories are numbered in at least two
// digits, and a machine has no use for more.
const MaxShards = 4096

// Shards is K.
func (r Router) Shards() int { return r.shards }

// Platforms are the platform suffixes, longest first.
func (r Router) Platforms() []string { return slices.Clone(r.platforms) }

// PaceKey is the key a domain's shard is computed from: the longest
// configured platform suffix the domain equals or lies under (all of a
// platform's sites share one pace, so they must share a shard), else the
// domain itself (a registrable domain, as the store keeps names).
func (r Router) PaceKey(domain string) string {
	for _, p := range r.platforms {
		if domain == p || (len(domain) > len(p) && domain[len(domain)-len(p)-1] == '.' && strings.HasSuffix(domain, p)) {
			return p
		}
	}
	return domain
}

// Of is the shard of domain: Jump(xxhash64(PaceKey(domain)), K). See the
// package doc for the exact definition and test vectors.
func (r Router) Of(domain string) int {
	if r.shards <= 1 {
		return 0
	}
	return Jump(xxhash.Sum64String(r.PaceKey(domain)), r.shards)
}

// Jump is Lamping and Veach's jump consistent hash ("A Fast, Minimal
// Memory, Consistent Hash Algorithm", 2014, figure 1): the bucket in
// [0, buckets) of key. Growing the number of buckets from n to m moves
// only a fraction 1-n/m of the keys, all into the new buckets, which is
// what resharding a store to more shards wants. Written out here (ten
// lines, the paper's own code) rather than taken from a module.
func Jump(key uint64, buckets int) int {
	var b, j int64 = -1, 0
	for j < int64(buckets) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}

// MustRouter is NewRouter for arguments known to be good; it panics
// otherwise.
func MustRouter(shards int, platforms []string) Router {
	r, err := NewRouter(shards, platforms)
	if err != nil {
		panic(err)
	}
	return r
}
