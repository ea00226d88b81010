package fleet

import (
	"encoding/binary"
	"slices"

	"github.com/cespare/xxhash/v2"
)

// Assign gives each of k shards its target node among the live nodes,
// from the live set and the shards' current owners (owners[s]: the node
// holding shard s now, "" for none; nil: no owners). Every node computes
// it from the same read of etcd, so they agree without talking to each
// other, and it is deterministic: the same names, owners and k give the
// same answer on every machine and in every release.
//
// Loads are even to within one: every node takes floor(k/n) or one more
// (only k mod n of them the one more). A live owner keeps the shards it holds up to that
// share, its most preferred first, so that a join or a leave moves only
// the shards it must: the leaver's, or the newcomer's share. The rest are
// placed in shard order, each on the node of highest rendezvous weight
// (xxhash64 of the node's name, a zero byte and the shard as 4 bytes
// big-endian) that still has room. (Plain rendezvous hashing, without
// the cap and without owners, moves as little but its loads are uneven:
// 64 shards on 3 nodes came out with up to 36 on one, against an even
// 22; with the cap but without owners a leave moved 1.3 to 3.7 times the
// shards it had to.)
//
// nodes may be in any order; duplicates count once. With no node, every
// target is "".
func Assign(nodes []string, owners []string, k int) []string {
	out := make([]string, k)
	names := slices.Clone(nodes)
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) == 0 || k <= 0 {
		return out
	}
	// Loads are floor or floor+1, and only k mod n nodes get the +1.
	floor, extra := k/len(names), k%len(names)
	load := make(map[string]int, len(names))
	room := func(n string) bool { return load[n] < floor || load[n] == floor && extra > 0 }
	take := func(n string, s int) {
		if load[n] == floor {
			extra--
		}
		load[n]++
		out[s] = n
	}
	live := make(map[string]bool, len(names))
	for _, n := range names {
		live[n] = true
	}
	// Owners keep their most preferred shards first.
	var kept []int
	for s := 0; s < k && s < len(owners); s++ {
		if live[owners[s]] {
			kept = append(kept, s)
		}
	}
	slices.SortFunc(kept, func(a, b int) int {
		wa, wb := weight(owners[a], a), weight(owners[b], b)
		switch {
		case wa > wb:
			return -1
		case wa < wb:
			return 1
		}
		return a - b
	})
	for _, s := range kept {
		if o := owners[s]; room(o) {
			take(o, s)
		}
	}
	order := slices.Clone(names)
	for s := 0; s < k; s++ {
		if out[s] != "" {
			continue
		}
		slices.SortFunc(order, func(a, b string) int {
			wa, wb := weight(a, s), weight(b, s)
			switch {
			case wa > wb:
				return -1
			case wa < wb:
				return 1
			}
			if a < b { // ties go to the smaller name
				return -1
			}
			return 1
		})
		for _, n := range order {
			if room(n) {
				take(n, s)
				break
			}
		}
	}
	return out
}

// weight is node's rendezvous weight for shard.
func weight(node string, shard int) uint64 {
	var buf [4]byte
	binary.BigEndian.PutUint32(buf[:], uint32(shard))
	d := xxhash.New()
	d.WriteString(node)
	d.Write([]byte{0})
	d.Write(buf[:])
	return d.Sum64()
}
