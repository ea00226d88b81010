package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// NodeInfo is a node's membership record, nodes/<name>, bound to its
// lease: it vanishes when the node stops renewing.
type NodeInfo struct {
	Name      string    `json:"name"`
	Addr      string    `json:"addr,omitempty"` // where the node serves its metrics, if it does
	Version   string    `json:"version"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	StartedAt time.Time `json:"started_at"`
	Lease     string    `json:"lease"` // etcd lease id, hex
}

// Handler is the node's work on its shards: the crawl implements it. The
// node calls Start, then (maybe Export, several at once) then Stop, for
// one holding of a shard; never Start and Stop of one shard at once.
type Handler interface {
	// Start prepares a shard the node just took (opens its store, or
	// restores it from the backup g.Previous names when the local copy is
	// not the latest: compare its recorded token with g.Previous.Token).
	// Requests wait for MaySend, which refuses until Start has returned
	// nil and g.ReadyAt has passed. ctx ends if the shard is to be given
	// up meanwhile. An error gives the shard up (retried later).
	Start(ctx context.Context, g Grant) error
	// Stop ends the work on a shard whose Start returned nil: the node is
	// giving it up (it moved,
	// or the node leaves; lost false) or has lost it (its lease or owner
	// key is gone; lost true). MaySend already refuses. Stop returns once
	// no request for the shard is in flight, with the wall-clock time
	// before which no request to the shard's sites may start (the latest
	// last-request-end + gap of its sites, for their pace); the zero time
	// when not known, and then the next owner waits the full takeover
	// wait.
	Stop(shard int, lost bool) (quietUntil time.Time)
	// Export writes the shard's part for a fleet rebuild and says where.
	// Its error is reported to the rebuild, which fails.
	Export(ctx context.Context, req ExportRequest, f Fence) (Part, error)
}

// Grant is one holding of a shard, handed to Handler.Start.
type Grant struct {
	Shard int
	// Token is the fencing token: the owner key's create revision, larger
	// than any earlier holding's. Record it in the shard's store.
	Token int64
	// Fence checks, before each commit to the shard's store, that this
	// holding is still current.
	Fence Fence
	// ReadyAt is the node's clock time from which requests may start
	// (after the takeover wait, or a clean handoff's quiet time).
	ReadyAt time.Time
	// Previous is the shard's state as its owners last wrote it (backup
	// location, token of that owner); nil: none ever written.
	Previous *ShardState
	// Handoff is the previous owner's clean release, nil when it did not
	// release the shard cleanly (its lease ran out) or there was none.
	Handoff *Handoff
}

// Handoff is written by an owner that gives a shard up cleanly
// (shards/<NNNN>/handoff), and consumed by the next owner.
type Handoff struct {
	Token      int64     `json:"token"`
	Node       string    `json:"node"`
	ReleasedAt time.Time `json:"released_at"`
	// QuietUntil: no request to the shard's sites before this time (the
	// releasing node's wall clock; the next owner adds the clock skew).
	QuietUntil time.Time `json:"quiet_until"`
}

// NodeOptions configure a crawl node's membership.
type NodeOptions struct {
	Name    string // --node: unique in the fleet
	Addr    string // shown by fleet status (the metrics address, if any)
	Version string
	Timing  Timing
	Handler Handler
	Clock   clockwork.Clock // nil: the real clock
	Logger  *slog.Logger    // nil: discard
	Metrics *Metrics        // nil: none
	// Resync is how often the node re-reads the whole fleet besides
	// reacting to watches (default TTL/2: a missed event costs at most
	// that much).
	Resync time.Duration
	// StartRetry is how long a shard whose Handler.Start failed is left
	// before the node tries it again (default 30 s).
	StartRetry time.Duration
	// JoinWait is how long Start waits for the node's name to be free (a
	// restarted node's previous lease runs out within the TTL; default
	// 2 × TTL). A name still held then is a NameInUseError.
	JoinWait time.Duration
	// ExportsAtOnce bounds Handler.Export calls running at once (default 2).
	ExportsAtOnce int

	leases  clientv3.Lease // nil: the client's (tests cut renewals through it)
	onRenew func(error)    // test hook: after each renewal attempt
}

// Node is one crawl node's membership in the fleet: its lease, the
// shards it holds, and the answers to rebuild barriers. Make one with
// StartNode; Close leaves the fleet cleanly.
type Node struct {
	cli    *clientv3.Client
	leases clientv3.Lease
	o      NodeOptions
	t      Timing
	clock  clockwork.Clock
	log    *slog.Logger
	m      *Metrics
	cfg    Config
	secret []byte
	info   NodeInfo

	mu       sync.Mutex
	lease    leaseView
	shards   map[int]*held
	backoff  map[int]time.Time
	leaving  bool
	lapsed   bool // the deadline passed since the last renewal (for the log)
	requests map[string]ExportRequest
	answered map[answerKeyT]bool

	paceMu sync.Mutex
	pace   paceLease

	kickc     chan struct{}
	exportSem chan struct{}
	ctx       context.Context
	cancel    context.CancelFunc
	loops     sync.WaitGroup // session, watch and reconcile loops
	holds     sync.WaitGroup // one per held shard
	closeOnce sync.Once

	onRenew func(error) // test hook: after each renewal attempt
}

type answerKeyT struct {
	id    string
	shard int
	token int64
}

type holdState int

const (
	starting holdState = iota
	active
	stopping
)

// held is one holding of a shard by this node.
type held struct {
	grant   Grant
	state   holdState
	lost    bool
	end     chan struct{} // closed when the holding is to end
	ctx     context.Context
	cancel  context.CancelFunc
	exports sync.WaitGroup
}

// StartNode joins the fleet at cli: it reads the fleet's config, claims
// nodes/<name> with a new lease (waiting up to JoinWait for a restarted
// node's old lease to run out), and starts keeping the lease alive and
// taking the shards the assignment gives it. ctx bounds the join only.
func StartNode(ctx context.Context, cli *clientv3.Client, o NodeOptions) (*Node, error) {
	if err := CheckNodeName(o.Name); err != nil {
		return nil, err
	}
	if o.Handler == nil {
		return nil, errors.New("fleet: NodeOptions.Handler is nil")
	}
	t := o.Timing.withDefaults()
	if err := t.check(); err != nil {
		return nil, err
	}
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Resync <= 0 {
		o.Resync = t.TTL / 2
	}
	if o.StartRetry <= 0 {
		o.StartRetry = 30 * time.Second
	}
	if o.JoinWait <= 0 {
		o.JoinWait = 2 * t.TTL
	}
	if o.ExportsAtOnce <= 0 {
		o.ExportsAtOnce = 2
	}
	leases := o.leases
	if leases == nil {
		leases = cli.Lease
	}
	cfg, secret, err := ReadConfig(ctx, cli)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	n := &Node{
		cli: cli, leases: leases, o: o, t: t, clock: o.Clock, m: o.Metrics,
		log:    o.Logger.With("node", o.Name),
		cfg:    cfg,
		secret: secret,
		info: NodeInfo{Name: o.Name, Addr: o.Addr, Version: o.Version, Host: host, PID: os.Getpid(),
			StartedAt: o.Clock.Now().UTC().Round(0).Truncate(time.Millisecond)},
		shards:    map[int]*held{},
		backoff:   map[int]time.Time{},
		requests:  map[string]ExportRequest{},
		answered:  map[answerKeyT]bool{},
		kickc:     make(chan struct{}, 1),
		exportSem: make(chan struct{}, o.ExportsAtOnce),
		onRenew:   o.onRenew,
	}
	giveUp := n.clock.Now().Add(o.JoinWait)
	for {
		err := n.join(ctx)
		if err == nil {
			break
		}
		var inUse *NameInUseError
		if !errors.As(err, &inUse) || !n.clock.Now().Before(giveUp) {
			return nil, err
		}
		n.log.Info("node name held by a live lease: waiting for it to run out", "held_by_pid", inUse.Held.PID, "held_on", inUse.Held.Host)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-n.clock.After(time.Second):
		}
	}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	n.m.watch(n)
	from := n.lease.joinRev + 1 // before the loops start: they change n.lease
	n.loops.Add(5)
	go n.sessionLoop()
	go n.reconcileLoop()
	go n.watchKick(nodesPrefix, from)
	go n.watchKick(shardsPrefix, from)
	go n.watchKick(requestsPrefix, from)
	n.kick()
	return n, nil
}

// Config is the fleet's config as the node read it when it joined.
func (n *Node) Config() Config { return n.cfg }

// Name is the node's name.
func (n *Node) Name() string { return n.o.Name }

// Close leaves the fleet cleanly: the node takes no more shards, gives up
// every shard it holds (Handler.Stop, then a handoff), and revokes its
// lease. It returns when that is done or ctx ends (then whatever is left
// runs out with the lease).
func (n *Node) Close(ctx context.Context) error {
	var err error
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.leaving = true
		for _, h := range n.shards {
			n.finishLocked(h, false)
		}
		n.mu.Unlock()
		done := make(chan struct{})
		go func() { n.holds.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
		}
		n.cancel()
		n.loops.Wait()
		<-done // Stop may not be abandoned half-way: the handler returns in time
		n.mu.Lock()
		id := n.lease.id
		n.lease = leaseView{}
		n.mu.Unlock()
		if id != 0 {
			rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
			if _, rerr := n.leases.Revoke(rctx, clientv3.LeaseID(id)); rerr != nil && err == nil {
				err = fmt.Errorf("revoking the node's lease (it runs out by itself within %v): %w", n.t.TTL, rerr)
			}
			cancel()
		}
		n.m.watch(nil)
		n.log.Info("left the fleet")
	})
	return err
}

// abandon stops the node as a crash would (tests): no release, no revoke.
func (n *Node) abandon() {
	n.closeOnce.Do(func() {
		n.mu.Lock()
		n.leaving = true
		n.lease = leaseView{}
		for _, h := range n.shards {
			n.finishLocked(h, true)
		}
		n.mu.Unlock()
		n.cancel()
		n.loops.Wait()
		n.holds.Wait()
		n.m.watch(nil)
	})
}

func (n *Node) kick() {
	select {
	case n.kickc <- struct{}{}:
	default:
	}
}

// join grants a lease and claims nodes/<name> with it.
func (n *Node) join(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	sentAt := n.clock.Now()
	g, err := n.leases.Grant(rctx, n.t.ttlSeconds())
	if err != nil {
		return fmt.Errorf("fleet lease: %w", err)
	}
	info := n.info
	info.Lease = fmt.Sprintf("%x", int64(g.ID))
	raw, _ := json.Marshal(info)
	key := nodeKey(n.o.Name)
	resp, err := n.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(raw), clientv3.WithLease(g.ID))).
		Else(clientv3.OpGet(key)).Commit()
	if err != nil || !resp.Succeeded {
		n.leases.Revoke(rctx, g.ID)
	}
	if err != nil {
		return fmt.Errorf("fleet join: %w", err)
	}
	if !resp.Succeeded {
		e := &NameInUseError{Name: n.o.Name}
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			json.Unmarshal(kvs[0].Value, &e.Held)
		}
		return e
	}
	n.mu.Lock()
	n.lease = leaseView{id: int64(g.ID), sentAt: sentAt, ttl: time.Duration(g.TTL) * time.Second, joinRev: resp.Header.Revision}
	n.lapsed = false
	n.mu.Unlock()
	n.m.sessionStarted()
	n.log.Info("joined the fleet", "fleet_id", n.cfg.FleetID, "shards", n.cfg.Shards, "lease", info.Lease, "ttl_s", g.TTL)
	return nil
}

// sessionLoop keeps the lease alive. It does not use
// concurrency.Session, which hides when each renewal was sent: the
// deadline is counted from that moment.
func (n *Node) sessionLoop() {
	defer n.loops.Done()
	for {
		n.mu.Lock()
		lv, leaving := n.lease, n.leaving
		n.mu.Unlock()
		var err error
		wait := n.t.renewEvery()
		switch {
		case lv.id == 0 && leaving:
			wait = time.Hour // closing: nothing to keep alive
		case lv.id == 0:
			if err = n.join(n.ctx); err != nil {
				wait = time.Second
				n.log.Warn("cannot rejoin the fleet; retrying", "err", err)
			} else {
				n.kick()
			}
		default:
			if err = n.renew(lv); err != nil {
				wait = n.t.retryEvery()
			}
		}
		if n.onRenew != nil {
			n.onRenew(err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-n.clock.After(wait):
		}
	}
}

// renew sends one keep-alive for lease lv and records when it was sent.
func (n *Node) renew(lv leaseView) error {
	sentAt := n.clock.Now()
	rctx, cancel := context.WithTimeout(n.ctx, n.t.requestTimeout())
	resp, err := n.leases.KeepAliveOnce(rctx, clientv3.LeaseID(lv.id))
	cancel()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		n.m.renewal(false)
		n.loseSession("the fleet lease ran out (etcd revoked it)")
		return err
	}
	if err != nil {
		n.m.renewal(false)
		n.mu.Lock()
		first := !n.lapsed && !n.lease.valid(n.clock.Now(), n.t.Margin)
		if first {
			n.lapsed = true
		}
		n.mu.Unlock()
		if first {
			n.log.Warn("fleet lease not renewed in time: no requests until etcd answers again", "err", err)
		} else {
			n.log.Debug("fleet lease renewal failed", "err", err)
		}
		return err
	}
	n.m.renewal(true)
	n.mu.Lock()
	resumed := n.lapsed
	if n.lease.id == lv.id {
		n.lease.sentAt, n.lease.ttl = sentAt, time.Duration(resp.TTL)*time.Second
		n.lapsed = false
	}
	n.mu.Unlock()
	if resumed {
		n.log.Info("fleet lease renewed again: requests resume")
		n.kick()
	}
	return nil
}

// loseSession drops the lease and every shard (their keys went with it).
func (n *Node) loseSession(why string) {
	n.mu.Lock()
	if n.lease.id == 0 {
		n.mu.Unlock()
		return
	}
	n.lease = leaseView{}
	for _, h := range n.shards {
		n.finishLocked(h, true)
	}
	n.mu.Unlock()
	n.log.Warn(why + ": its shards are dropped; rejoining")
}

// finishLocked asks holding h to end (idempotent); n.mu is held.
func (n *Node) finishLocked(h *held, lost bool) {
	if h.state == stopping {
		return
	}
	h.state, h.lost = stopping, lost
	close(h.end)
}

// watchKick turns changes under prefix into reconciles. It watches from
// the revision the node joined at, so that no change after the join is
// missed, and after a break from just after the last revision it saw
// (from now, with a full re-read, if etcd compacted that away). The
// watch asks for a leader, so that a member cut off from the others ends
// it rather than stay silent.
func (n *Node) watchKick(prefix string, from int64) {
	defer n.loops.Done()
	for n.ctx.Err() == nil {
		wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(n.ctx))
		opts := []clientv3.OpOption{clientv3.WithPrefix()}
		if from > 0 {
			opts = append(opts, clientv3.WithRev(from))
		}
		for resp := range n.cli.Watch(wctx, prefix, opts...) {
			if resp.CompactRevision != 0 {
				from = 0
			}
			if resp.Err() != nil {
				break
			}
			if resp.Header.Revision > 0 {
				from = resp.Header.Revision + 1
			}
			if len(resp.Events) > 0 {
				n.kick()
			}
		}
		cancel()
		n.kick() // something may have changed while the watch was down
		select {
		case <-n.ctx.Done():
			return
		case <-n.clock.After(time.Second):
		}
	}
}

func (n *Node) reconcileLoop() {
	defer n.loops.Done()
	tick := n.clock.NewTicker(n.o.Resync)
	defer tick.Stop()
	var lastErr string
	var retry <-chan time.Time // after a failed reconcile: try again soon
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-n.kickc:
		case <-tick.Chan():
		case <-retry:
		}
		retry = nil
		err := n.reconcile(n.ctx)
		if err != nil && n.ctx.Err() == nil {
			if err.Error() != lastErr {
				n.log.Warn("fleet: cannot read or update the fleet's state; will retry", "err", err)
			}
			retry = n.clock.After(n.t.retryEvery())
		}
		lastErr = ""
		if err != nil {
			lastErr = err.Error()
		}
	}
}

type ownerKV struct {
	node  string
	token int64
}

// reconcile reads the live nodes, shard owners and rebuild requests in
// one consistent read, gives up shards whose target is another node (or
// whose key is gone), takes unowned shards whose target is this node,
// and starts the exports asked of it.
func (n *Node) reconcile(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Txn(rctx).Then(
		clientv3.OpGet(nodesPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(shardsPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(requestsPrefix, clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return err
	}
	var live []string
	var mine *NodeInfo
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		name := strings.TrimPrefix(string(kv.Key), nodesPrefix)
		live = append(live, name)
		if name == n.o.Name {
			var info NodeInfo
			json.Unmarshal(kv.Value, &info)
			info.Lease = fmt.Sprintf("%x", kv.Lease)
			mine = &info
		}
	}
	owners := map[int]ownerKV{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		if s, leaf, ok := parseShardKey(string(kv.Key)); ok && leaf == ownerLeaf {
			owners[s] = ownerKV{node: string(kv.Value), token: kv.CreateRevision}
		}
	}
	requests := map[string]ExportRequest{}
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		var r ExportRequest
		if err := json.Unmarshal(kv.Value, &r); err == nil && r.ID != "" {
			requests[r.ID] = r
		}
	}

	n.mu.Lock()
	lv := n.lease
	if lv.id != 0 && resp.Header.Revision < lv.joinRev {
		// A read from before this session's join: read again.
		n.mu.Unlock()
		n.kick()
		return nil
	}
	if lv.id != 0 && (mine == nil || mine.Lease != fmt.Sprintf("%x", lv.id)) {
		// Our membership key is gone (or another lease holds our name):
		// our lease must have run out although no renewal said so yet.
		n.mu.Unlock()
		n.loseSession("the node's membership key is gone")
		return nil
	}
	current := make([]string, n.cfg.Shards)
	for s, o := range owners {
		if s < len(current) {
			current[s] = o.node
		}
	}
	targets := Assign(live, current, n.cfg.Shards)
	for s, h := range n.shards {
		if h.state == stopping {
			continue
		}
		o, ok := owners[s]
		switch {
		case !ok || o.token != h.grant.Token:
			n.log.Warn("shard lost: its owner key is gone or not ours", "shard", s, "token", h.grant.Token)
			n.finishLocked(h, true)
		case n.leaving || targets[s] != n.o.Name:
			n.log.Info("giving shard up", "shard", s, "to", targets[s])
			n.finishLocked(h, false)
		}
	}
	// Owner keys of ours that no holding stands behind: a release that
	// failed, or a take whose answer was lost. Delete them (the next owner
	// waits the full takeover wait: nothing says when their sites are quiet).
	type orphan struct {
		shard int
		token int64
	}
	var orphans []orphan
	for s, o := range owners {
		if o.node == n.o.Name && n.shards[s] == nil {
			orphans = append(orphans, orphan{s, o.token})
		}
	}
	var take []int
	now := n.clock.Now()
	if lv.id != 0 && !n.leaving {
		for s, target := range targets {
			_, owned := owners[s]
			if target == n.o.Name && !owned && n.shards[s] == nil && !now.Before(n.backoff[s]) {
				take = append(take, s)
			}
		}
	}
	n.requests = requests
	n.mu.Unlock()
	for _, o := range orphans {
		if err := n.dropOrphan(ctx, o.shard, o.token); err != nil {
			return err
		}
	}
	for _, s := range take {
		if err := n.acquire(ctx, s, lv); err != nil {
			return err
		}
	}
	n.startExports()
	return nil
}

// dropOrphan deletes shard s's owner key if it is still the one with
// token (the transaction compares them: a key taken since is left alone).
func (n *Node) dropOrphan(ctx context.Context, s int, token int64) error {
	owner := shardKey(s, ownerLeaf)
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(owner), "=", token)).
		Then(clientv3.OpDelete(owner)).Commit()
	if err != nil {
		return fmt.Errorf("dropping shard %d's stray owner key: %w", s, err)
	}
	if resp.Succeeded {
		n.log.Warn("dropped a stray owner key of this node (a release that failed, or a take whose answer was lost)", "shard", s, "token", token)
	}
	return nil
}

// acquire takes shard s if it has no owner: one transaction creates the
// owner key with the node's lease (its create revision is the fencing
// token), consumes the previous owner's handoff and reads the shard's
// state.
func (n *Node) acquire(ctx context.Context, s int, lv leaseView) error {
	owner := shardKey(s, ownerLeaf)
	rctx, cancel := context.WithTimeout(ctx, n.t.requestTimeout())
	defer cancel()
	resp, err := n.cli.Txn(rctx).
		If(clientv3.Compare(clientv3.CreateRevision(owner), "=", 0)).
		Then(
			clientv3.OpPut(owner, n.o.Name, clientv3.WithLease(clientv3.LeaseID(lv.id))),
			clientv3.OpDelete(shardKey(s, handoffLeaf), clientv3.WithPrevKV()),
			clientv3.OpGet(shardKey(s, stateLeaf)),
		).Commit()
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		n.loseSession("the fleet lease ran out (a shard could not be taken with it)")
		return nil
	}
	if err != nil {
		return fmt.Errorf("taking shard %d: %w", s, err)
	}
	if !resp.Succeeded {
		return nil // another node was quicker; the next reconcile sees it
	}
	now := n.clock.Now()
	g := Grant{Shard: s, Token: resp.Header.Revision}
	if prev := resp.Responses[1].GetResponseDeleteRange().PrevKvs; len(prev) == 1 {
		var h Handoff
		if json.Unmarshal(prev[0].Value, &h) == nil {
			g.Handoff = &h
		}
	}
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) == 1 {
		var st ShardState
		if json.Unmarshal(kvs[0].Value, &st) == nil {
			g.Previous = &st
		}
	}
	wait := n.t.TakeoverWait()
	if g.Handoff != nil {
		wait = max(0, g.Handoff.QuietUntil.Add(n.t.ClockSkew).Sub(now))
	}
	g.ReadyAt = now.Add(wait)
	g.Fence = Fence{Shard: s, Token: g.Token, node: n}
	h := &held{grant: g, end: make(chan struct{})}
	h.ctx, h.cancel = context.WithCancel(n.ctx)
	n.mu.Lock()
	if n.lease.id != lv.id || n.leaving {
		// The lease went while the transaction ran: the key goes with it.
		n.mu.Unlock()
		h.cancel()
		return nil
	}
	n.shards[s] = h
	n.holds.Add(1)
	n.mu.Unlock()
	n.m.shardChange("acquired")
	n.log.Info("took shard", "shard", s, "token", g.Token, "clean_handoff", g.Handoff != nil, "first_request_in", wait.Round(time.Millisecond).String())
	go n.hold(h)
	return nil
}

// hold runs one holding of a shard: Start, serve until asked to end,
// Stop, release.
func (n *Node) hold(h *held) {
	defer n.holds.Done()
	defer h.cancel()
	s := h.grant.Shard
	err := n.o.Handler.Start(h.ctx, h.grant)
	n.mu.Lock()
	if err == nil && h.state == starting {
		h.state = active
		n.kick() // exports may be waiting for it
	}
	if err != nil {
		n.backoff[s] = n.clock.Now().Add(n.o.StartRetry)
		n.finishLocked(h, h.lost)
	}
	n.mu.Unlock()
	var quiet time.Time
	if err != nil {
		n.log.Error("could not start shard: giving it up for a while", "shard", s, "err", err, "retry_in", n.o.StartRetry.String())
		quiet = h.grant.ReadyAt // no request was sent; the previous owner's quiet time still holds
	} else {
		<-h.end
		h.cancel()
		h.exports.Wait()
		quiet = n.o.Handler.Stop(s, h.lost)
	}
	if !h.lost {
		n.release(h, quiet)
	}
	n.mu.Lock()
	if n.shards[s] == h {
		delete(n.shards, s)
	}
	n.mu.Unlock()
	if h.lost {
		n.m.shardChange("lost")
	} else {
		n.m.shardChange("released")
	}
	n.kick()
}

// release deletes the owner key, if it is still this holding's, and
// leaves a handoff saying until when the shard's sites must stay quiet
// (none when quiet is zero: the next owner then waits the full takeover
// wait). It retries for up to a TTL: after that the lease may be gone
// and the key with it.
func (n *Node) release(h *held, quiet time.Time) {
	s, token := h.grant.Shard, h.grant.Token
	owner := shardKey(s, ownerLeaf)
	ops := []clientv3.Op{clientv3.OpDelete(owner)}
	if !quiet.IsZero() {
		if quiet.Before(h.grant.ReadyAt) {
			quiet = h.grant.ReadyAt
		}
		raw, _ := json.Marshal(Handoff{Token: token, Node: n.o.Name, ReleasedAt: wall(n.clock.Now()), QuietUntil: wall(quiet)})
		ops = append(ops, clientv3.OpPut(shardKey(s, handoffLeaf), string(raw)))
	}
	ctx, cancel := context.WithTimeout(context.Background(), n.t.TTL)
	defer cancel()
	for {
		rctx, rcancel := context.WithTimeout(ctx, n.t.requestTimeout())
		resp, err := n.cli.Txn(rctx).
			If(clientv3.Compare(clientv3.CreateRevision(owner), "=", token)).
			Then(ops...).Commit()
		rcancel()
		if err == nil {
			if resp.Succeeded {
				n.log.Info("released shard", "shard", s, "token", token, "clean_handoff", !quiet.IsZero())
			}
			return
		}
		if ctx.Err() != nil {
			n.log.Warn("could not release shard: its key runs out with the lease", "shard", s, "err", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-n.clock.After(n.t.retryEvery()):
		}
	}
}

// wall strips the monotonic reading and rounds to milliseconds, for
// times written to etcd.
func wall(t time.Time) time.Time { return t.Round(0).UTC().Truncate(time.Millisecond) }

// MaySend reports whether a request for shard may start now: nil, or a
// *NotNowError saying why not (wrapping ErrDeadline, ErrNotOwner,
// ErrTakeoverWait, ...) and, when known, until when. The crawl asks it
// before every request of the shard's sites; it reads only local state.
func (n *Node) MaySend(shard int) error {
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.leaseOKLocked(shard, now); err != nil {
		return err
	}
	h := n.shards[shard]
	switch {
	case h == nil:
		return &NotNowError{Shard: shard, Err: ErrNotOwner}
	case h.state == starting:
		return &NotNowError{Shard: shard, Err: ErrStarting}
	case h.state == stopping:
		return &NotNowError{Shard: shard, Err: ErrStopping}
	case now.Before(h.grant.ReadyAt):
		return &NotNowError{Shard: shard, Err: ErrTakeoverWait, Until: h.grant.ReadyAt}
	}
	return nil
}

func (n *Node) leaseOKLocked(shard int, now time.Time) error {
	if n.lease.id == 0 {
		return &NotNowError{Shard: shard, Err: ErrNoSession}
	}
	if !n.lease.valid(now, n.t.Margin) {
		return &NotNowError{Shard: shard, Err: ErrDeadline}
	}
	return nil
}

// Deadline is the local clock time until which the node may assume it
// holds its lease (zero without one). Requests stop there.
func (n *Node) Deadline() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lease.deadline(n.t.Margin)
}

// Owned lists the shards this node holds, in shard order, with their
// tokens and whether requests may start now.
func (n *Node) Owned() []OwnedShard {
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	valid := n.lease.valid(now, n.t.Margin)
	out := make([]OwnedShard, 0, len(n.shards))
	for s := 0; s < n.cfg.Shards; s++ {
		h := n.shards[s]
		if h == nil {
			continue
		}
		out = append(out, OwnedShard{Shard: s, Token: h.grant.Token, ReadyAt: h.grant.ReadyAt,
			Ready: valid && h.state == active && !now.Before(h.grant.ReadyAt)})
	}
	return out
}

// OwnedShard is one entry of Node.Owned.
type OwnedShard struct {
	Shard   int
	Token   int64
	ReadyAt time.Time
	Ready   bool // MaySend would say yes now
}

// Fence is one holding's fencing token and its check. The shard's store
// records Token when the holding starts and calls Check before every
// commit: a commit goes ahead only while the holding is current and the
// node's lease deadline has not passed, so a node that lost a shard (or
// may have: its lease could have run out) writes nothing more to it.
type Fence struct {
	Shard int
	Token int64
	node  *Node
	check func() error
}

// NewFence makes a fence that checks with check (fakes and tests).
func NewFence(shard int, token int64, check func() error) Fence {
	return Fence{Shard: shard, Token: token, check: check}
}

// Check returns nil while a commit under this fence may go ahead, else a
// *NotNowError. It reads only local state (no round trip to etcd).
func (f Fence) Check() error {
	if f.check != nil {
		return f.check()
	}
	if f.node == nil {
		return &NotNowError{Shard: f.Shard, Err: ErrNotOwner}
	}
	n := f.node
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.leaseOKLocked(f.Shard, now); err != nil {
		return err
	}
	h := n.shards[f.Shard]
	switch {
	case h == nil || h.grant.Token != f.Token:
		return &NotNowError{Shard: f.Shard, Err: ErrTokenChanged}
	case h.state == stopping:
		return &NotNowError{Shard: f.Shard, Err: ErrStopping}
	}
	return nil
}
