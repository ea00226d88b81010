// Package fleet coordinates several crawl machines through etcd: which
// node works which shard of the store, when it may send requests for it,
// a pace shared by sites on one IP address, and the barrier of a fleet
// rebuild. It uses etcd's client (leases, transactions, watches,
// concurrency.Session and Mutex) and nothing home-made on the wire.
//
// # Roles
//
// A crawl node calls StartNode with a Handler (the crawl's work on a
// shard: Start, Ready, Stop, Export) and asks the node, through the Gate
// interface, before every request (MaySend), before a request to a
// shared address (ReserveIP), after a visit a site ended by asking to
// wait (PutHoldOff) and after a backup (PutShardState); the
// shard's store calls Fence.Check before every commit. A fleet rebuild
// takes LockRebuild and runs CollectExports. Init makes a fleet;
// ReadStatus reads one. fleettest.Fake stands in for a node in tests.
//
// # Keys
//
// Everything lives under Prefix, /mapthenet/v1/ (DESIGN.md, "Fleet
// coordination", is the contract; values are JSON unless said):
//
//	config                      {format, shards, fleet_id, created_at}: Init, once (txn: create_revision == 0)
//	secret                      hex, 32 random bytes: Init, once; keys the pace HMAC
//	nodes/<name>                NodeInfo: the node, put with its lease (txn: create_revision == 0, so one live node per name)
//	shards/<NNNN>/owner         the owner's name, bound to its lease; create_revision is the fencing token
//	shards/<NNNN>/handoff       Handoff: put by an owner releasing cleanly, deleted by the next owner's take
//	shards/<NNNN>/state         ShardState (backup location): owner, txn guarded by its token
//	shards/<NNNN>/counts        ShardCounts (due and waiting domains): owner, every minute, txn guarded by its token
//	shards/<NNNN>/export        ExportRecord (last part exported): owner, txn guarded by its token
//	shards/<NNNN>/holdoff/<d>   a site's wait, unix ms (text): any node whose visit learnt it, extend-only compare-and-swap, a lease that runs out then (holdoff.go)
//	pace/ip/<hmac>              next allowed start, unix ms (decimal text): compare-and-swap on mod_revision, short lease
//	rebuild/lock/<lease hex>    Holder: concurrency.Mutex of the fleet rebuild, bound to its session
//	rebuild/requests/<id>       ExportRequest: the rebuild, bound to its session lease
//	rebuild/answers/<id>/<NNNN> ExportAnswer: the shard's owner, bound to the rebuild's lease, txn guarded by the owner's token
//	rebuild/last                RebuildSummary: the rebuild, when its barrier ends
//
// <NNNN> is the shard number in four digits, <name> a node name
// (CheckNodeName), <hmac> the first 16 bytes, in hex, of HMAC-SHA-256
// under the secret of the address's 16-byte form (IPv4 as IPv4-mapped).
//
// # Assignment
//
// Every node computes the same target for every shard from one read of
// nodes/ and the shards' owners (Assign): loads even to within one, a
// live owner keeping what it holds up to its share, the rest placed by
// rendezvous hashing. A node gives up (Handler.Stop, then a handoff) the
// shards whose target is another node, and takes, with one transaction
// that creates the owner key only if it is absent, the unowned shards
// whose target it is. Watches of nodes/, shards/ and rebuild/requests/
// trigger that at once; a full re-read every TTL/2 catches anything a
// watch missed.
//
// A node that has just joined settles first (NodeOptions.Settle, the
// TTL by default): it takes no shard, its record says Settling, and the
// owners of the shards whose target it is keep them until it has
// settled and written its record again without that. Nodes started
// together thus take their shares once each, rather than the first
// taking every shard and handing most over as the others join.
//
// # Failover timing
//
// The site cannot check a fencing token, so the one-request-at-a-time
// promise rests on time. Let node A hold a shard under a lease of TTL T
// and have sent its last successful renewal at s (its own monotonic
// clock). Its deadline is D = s + T − m (Timing.Margin).
//
//  1. etcd keeps the lease, and so A's owner key, until at least s + T:
//     the leader extended it by T when it received the renewal, after s.
//     A leader that lost its quorum renews for up to two election
//     timeouts before it steps down (raft checks the quorum once an
//     election timeout, counting the answers since the last check), but a
//     new leader is elected no sooner than an election timeout after the
//     old one last reached it and extends every lease by another
//     (etcd-io/etcd#4778), so those renewals keep their promise too.
//  2. A starts no request after D (MaySend), and every request started
//     before D ends by D + R (R: Timing.ResponseTimeout, the crawl's
//     whole-response timeout).
//  3. B can take the shard only once the key is gone, at c ≥ s + T, and,
//     finding no handoff, sends its first request at c + T + R + k
//     (k: Timing.ClockSkew) or later.
//
// So A's last request ends by s + T − m + R, and B's first starts at
// s + 2T + R + k or later: a gap of at least T + m + k (12.25 s with the
// defaults) that absorbs what the argument does not bound: A's process
// paused between asking MaySend and sending, and a site's own gap after
// a takeover. A pause longer than that gap, exactly there, could still
// overlap; a Crawl-delay longer than it is not honoured across an
// unclean takeover (the new owner cannot know the old one's last
// request). A clean handoff has neither problem: A stops its work first
// and writes the time until which the shard's sites must stay quiet;
// B waits until then plus k.
//
// A site's wait (a 429 or 503, a block) is a time, not a request, so it
// is kept in etcd rather than in the timing: PutHoldOff writes it
// whether or not the node still holds the shard; what etcd does not take
// (a visit that ended past the deadline) stays pending on the node, also
// in NodeOptions.HoldOffFile, until etcd answers; and B reads the
// shard's hold-offs when it takes it and again once its wait is over,
// right before its first request (Handler.Ready), then through its
// watch. So B honours a wait A learnt cut off from etcd if A reaches
// etcd again within B's takeover wait (holdoff.go).
//
// If etcd loses its quorum, renewals fail, the deadline passes and
// MaySend and every Fence refuse (fail closed); the node keeps its
// shards. When a renewal succeeds again the lease has survived (a new
// leader refreshes every lease) and requests resume at once; if etcd
// says the lease is gone the node drops its shards, joins again under a
// new lease and takes its shards back with the takeover wait.
//
// # Fencing
//
// A holding's token is its owner key's create revision: every new
// holding gets a larger one. The crawl records it in the shard's store
// when Start runs and compares it with Grant.Previous.Token, the token
// of the owner that last wrote the shard's state: equal, its local copy
// is the latest; else it restores Grant.Previous.Backup. Fence.Check,
// before every commit, refuses once the holding is no longer current or
// the deadline has passed; the fleet's own writes for a shard (state,
// export answers, release) are transactions that compare the owner key's
// create revision with the token, so a stale owner cannot make them.
package fleet
