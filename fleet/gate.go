package fleet

import (
	"context"
	"net/netip"
	"time"
)

// Gate is what a crawl asks of the fleet while it works (the seam between
// the crawl and the fleet: *Node is the etcd one; fleettest.Fake stands in
// for it in the crawl's own tests). The fleet in turn drives the crawl's
// Handler: Start, Stop and Export of its shards.
type Gate interface {
	// MaySend before every request for a shard's sites: nil, or a
	// *NotNowError (until when, if known).
	MaySend(shard int) error
	// ReserveIP before a request to an address shared by several sites,
	// when --ip-delay is on: wait until the time it returns.
	ReserveIP(ctx context.Context, ip netip.Addr, delay time.Duration) (time.Time, error)
	// PutShardState after a backup.
	PutShardState(ctx context.Context, f Fence, st ShardState) error
	// PutShardCounts every minute: what fleet status shows as due.
	PutShardCounts(ctx context.Context, f Fence, c ShardCounts) error
	// PutHoldOff after a visit a site ended by asking to wait (a 429 or
	// 503, a block), whether or not the node still holds the shard: every
	// later owner honours it (Grant.HoldOff, Handler.Ready). An error
	// wrapping ErrHoldOffPending: etcd did not take it now, the node
	// writes it as soon as etcd answers.
	PutHoldOff(ctx context.Context, shard int, domain string, until time.Time) error
}

var _ Gate = (*Node)(nil)
