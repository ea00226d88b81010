// Package shard is the link store split into K shards, each its own
// Badger store (package graph), so that ingest commits on several stores
// at once and a crawl fleet can give each node whole shards.
//
// # Layout
//
// K is fixed when the store is made (Options.Shards; `mapthenet init
// --shards K`, `crawl --create --shards K`) and recorded in it:
//
//	store/                 K = 1: today's layout, the store directory is the
//	                       one Badger store (stores made before shards open
//	                       unchanged)
//	store/shards.json      K > 1: the layout (Layout): {"format": 1,
//	                       "shards": K, "hash": "xxhash64-jump",
//	                       "platforms": [...]}
//	store/shard-NN/        shard NN (two digits or more), a Badger store whose
//	                       m/shard key (graph.MetaShard) holds the same layout
//	                       and its own number
//
// Open refuses a store whose shards disagree with shards.json, or one
// missing (ErrLayout), naming the shard. A store of K shards is made in a
// new directory beside store/ and renamed into place: it appears whole
// or not at all. Changing K is `mapthenet store reshard` (Reshard),
// offline, never done silently.
//
// # Routing: which shard a domain lives in
//
// shard(d) = Jump(XXH64(paceKey(d)), K), where paceKey(d) is the longest
// platform suffix p of the store's layout (the crawl's shared platforms,
// e.g. neocities.org) with d == p or d ending in "." + p, else d itself (a
// registrable domain, lower case, IDNA A-labels, as the store keeps
// names), so that every site of a platform, which shares one pace, lives
// in one shard; XXH64 is xxHash64 with seed 0 over the key's bytes
// (XXH64("") = 0xef46db3751d8e999), as github.com/cespare/xxhash/v2
// computes it; and Jump is Lamping and Veach's jump consistent hash ("A
// Fast, Minimal Memory, Consistent Hash Algorithm", 2014, figure 1):
//
//	func Jump(key uint64, k int) int {
//		b, j := int64(-1), int64(0)
//		for j < int64(k) {
//			b = j
//			key = key*2862933555777941757 + 1
//			j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
//		}
//		return int(b)
//	}
//
// Test vectors (route_test.go checks them; platforms: neocities.org):
//
//	domain               pace key          XXH64             K=2 K=8 K=64 K=1000
//	example.com          example.com       2883ba7dc9aa3289   1   1   51   154
//	wikipedia.org        wikipedia.org     7f0bd6e521ecf3e0   1   1   40   683
//	alice.neocities.org  neocities.org     c3fe0d7032b79117   1   2   31    95
//	xn--bcher-kva.example                  5fc36e2fc115118b   0   7   14   766
//
// # What each shard holds
//
// A visit is recorded in its domain's shard: the domain's state, its
// out-edges and its visit log. A link target owned by another shard is
// recorded in the linking shard as a reference: a name with a local id
// and a record that is never visited (first seen, followed-in), as new
// domains always were. A domain's own shard has its record once it is
// seeded or visited, or linked from a domain of the same shard. Ids are
// local to a shard; the snapshot's ids are assigned when the rebuild
// merges the shards' exports in name order (package rebuild).
//
// The removal list is kept whole in every shard (a removal goes to all),
// so that every shard drops links to a removed domain.
//
// # Writes, durability, fences
//
// Shards commit independently and in parallel: the crawl's recorder
// batches per shard (RecordShard), and a visit is logged as recorded
// only after its own shard committed it; each shard syncs each commit
// (graph's durability holds per shard). RecordVisits, for tools, splits a
// batch by shard and is not atomic across shards. A fence per shard
// (SetFence; a fleet node's holding) is checked before every commit.
//
// # Backups
//
// Backup writes one file: for K = 1 Badger's stream as before; for K > 1
// a tar of shards.json and each shard's stream (shard-NN.badger), all
// taken at once, each consistent within its shard. Restore makes a new
// store from either; RestoreShard restores one shard (a fleet node taking
// a shard from its last backup). Verify checks every shard and names the
// shard and file of any damage.
package shard
