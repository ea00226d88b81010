package fleet

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// holdOffLeaf is shards/<NNNN>/holdoff/<domain>: a site of the shard that
// asked its owner to wait (a 429 or 503, a bot-protection block), with the
// time until which it must not be asked again, unix ms (decimal text). It
// is bound to a lease of its own that runs out then. The owner writes it
// as soon as the visit ends, before the visit reaches its store, so that
// the next owner honours the wait even when this owner dies before its
// store moves (a kill -9: the next owner restores the last backup, which
// does not hold that visit).
const holdOffLeaf = "holdoff/"

// PutHoldOff records that domain, of shard f.Shard, must not be visited
// before until (holding f: refused once f is not current).
func (n *Node) PutHoldOff(ctx context.Context, f Fence, domain string, until time.Time) error {
	if err := f.Check(); err != nil {
		return err
	}
	if domain == "" || strings.ContainsAny(domain, "/ \t\n") {
		return fmt.Errorf("hold-off of %q: not a domain", domain)
	}
	ttl := until.Sub(n.clock.Now()) + n.t.ClockSkew
	if ttl <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*n.t.requestTimeout())
	defer cancel()
	lease, err := n.cli.Grant(ctx, max(int64((ttl+time.Second-1)/time.Second), 2))
	if err != nil {
		return fmt.Errorf("shard %d hold-off: %w", f.Shard, err)
	}
	resp, err := n.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(shardKey(f.Shard, ownerLeaf)), "=", f.Token)).
		Then(clientv3.OpPut(shardKey(f.Shard, holdOffLeaf+domain), strconv.FormatInt(until.UnixMilli(), 10), clientv3.WithLease(lease.ID))).
		Commit()
	if err != nil {
		return fmt.Errorf("shard %d hold-off: %w", f.Shard, err)
	}
	if !resp.Succeeded {
		n.cli.Revoke(ctx, lease.ID)
		return &NotNowError{Shard: f.Shard, Err: ErrTokenChanged}
	}
	return nil
}

// parseHoldOffs reads the hold-off keys of one shard (a range read of
// shards/<NNNN>/holdoff/).
func parseHoldOffs(s int, kvs []kvPair) map[string]time.Time {
	out := map[string]time.Time{}
	pfx := shardKey(s, holdOffLeaf)
	for _, kv := range kvs {
		domain, ok := strings.CutPrefix(kv.key, pfx)
		ms, err := strconv.ParseInt(kv.value, 10, 64)
		if ok && domain != "" && err == nil {
			out[domain] = time.UnixMilli(ms)
		}
	}
	return out
}

type kvPair struct{ key, value string }
