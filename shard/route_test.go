package shard

import (
	"fmt"
	"testing"

	"github.com/cespare/xxhash/v2"
)

func TestJumpReferenceVectors(t *testing.T) {
	// From the reference C++ code of the paper (as github.com/dgryski/go-jump's tests list them).
	for _, tc := range []struct {
		key     uint64
		buckets []int
	}{
		{0, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{1, []int{0, 0, 0, 0, 0, 0, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 17, 17}},
		{0xdeadbeef, []int{0, 1, 2, 3, 3, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 16, 16, 16}},
		{0x0ddc0ffeebadf00d, []int{0, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 15, 15, 15, 15}},
	} {
		for i, want := range tc.buckets {
			if got := Jump(tc.key, i+1); got != want {
				t.Errorf("Jump(%#x, %d) = %d, want %d", tc.key, i+1, got, want)
			}
		}
	}
}

// The vectors of the package doc: anyone computing shards elsewhere can
// check against them.
func TestRouteVectors(t *testing.T) {
	if got := xxhash.Sum64String(""); got != 0xef46db3751d8e999 {
		t.Fatalf("XXH64(\"\") = %x", got)
	}
	for _, tc := range []struct {
		domain, key string
		hash        uint64
		shard       map[int]int
	}{
		{"example.com", "example.com", 0x2883ba7dc9aa3289, map[int]int{1: 0, 2: 1, 8: 1, 64: 51, 1000: 154}},
		{"wikipedia.org", "wikipedia.org", 0x7f0bd6e521ecf3e0, map[int]int{2: 1, 8: 1, 64: 40, 1000: 683}},
		{"alice.neocities.org", "neocities.org", 0xc3fe0d7032b79117, map[int]int{2: 1, 8: 2, 64: 31, 1000: 95}},
		{"neocities.org", "neocities.org", 0xc3fe0d7032b79117, map[int]int{2: 1, 8: 2, 64: 31, 1000: 95}},
		{"xn--bcher-kva.example", "xn--bcher-kva.example", 0x5fc36e2fc115118b, map[int]int{2: 0, 8: 7, 64: 14, 1000: 766}},
	} {
		for k, want := range tc.shard {
			r, err := NewRouter(k, []string{"neocities.org"})
			if err != nil {
				t.Fatal(err)
			}
			if key := r.PaceKey(tc.domain); key != tc.key {
				t.Errorf("PaceKey(%s) = %s, want %s", tc.domain, key, tc.key)
			}
			if h := xxhash.Sum64String(tc.key); h != tc.hash {
				t.Errorf("XXH64(%s) = %x, want %x", tc.key, h, tc.hash)
			}
			if got := r.Of(tc.domain); got != want {
				t.Errorf("K=%d: shard of %s = %d, want %d", k, tc.domain, got, want)
			}
		}
	}
}

// The platform rule: every site of a configured platform lands in the
// platform's shard, the longest matching suffix wins whatever the order
// the platforms were given in, and other domains spread over all shards.
func TestPlatformRule(t *testing.T) {
	for _, order := range [][]string{{"neocities.org", "github.io", "pages.example.net", "example.net"}, {"example.net", "github.io", "pages.example.net", "neocities.org"}} {
		r, err := NewRouter(16, order)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"neocities.org", "github.io", "pages.example.net", "example.net"} {
			want := r.Of(p)
			for i := range 200 {
				site := fmt.Sprintf("site%d.%s", i, p)
				if got := r.Of(site); got != want {
					t.Fatalf("platforms %q: %s in shard %d, its platform %s in %d", order, site, got, p, want)
				}
			}
		}
		if k := r.PaceKey("a.pages.example.net"); k != "pages.example.net" {
			t.Errorf("platforms %q: pace key of a.pages.example.net = %s, want the longer suffix", order, k)
		}
		for _, d := range []string{"notneocities.org", "xneocities.org", "neocities.org.evil.test"} {
			if k := r.PaceKey(d); k != d {
				t.Errorf("PaceKey(%s) = %s: not under the platform", d, k)
			}
		}
		counts := make([]int, 16)
		for i := range 16000 {
			counts[r.Of(fmt.Sprintf("domain%d.test", i))]++
		}
		for i, c := range counts {
			if c < 800 || c > 1200 {
				t.Errorf("shard %d has %d of 16000 domains: want about 1000", i, c)
			}
		}
	}
	if _, err := NewRouter(0, nil); err == nil {
		t.Error("0 shards accepted")
	}
	if _, err := NewRouter(MaxShards+1, nil); err == nil {
		t.Error("too many shards accepted")
	}
}

// Growing K moves domains only into the new shards (jump hash's promise),
// which a reshard to more shards relies on for its minimal moves.
func TestJumpMovesOnlyToNewShards(t *testing.T) {
	for i := range 5000 {
		key := xxhash.Sum64String(fmt.Sprintf("d%d.test", i))
		for k := 1; k < 20; k++ {
			a, b := Jump(key, k), Jump(key, k+1)
			if a != b && b != k {
				t.Fatalf("key %x moved from %d to %d when K went %d→%d", key, a, b, k, k+1)
			}
		}
	}
}
