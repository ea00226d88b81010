package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"go.etcd.io/etcd/api/v3/mvccpb"
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
	// Settling: the node joined less than its NodeOptions.Settle ago and
	// takes no shard yet; the shards the assignment gives it stay with
	// their owners until it has settled (then it writes its record again
	// without this).
	Settling bool `json:"settling,omitempty"`
}

// Handler is the node's work on its shards: the crawl implements it. The
// node calls Start, then (maybe Export, several at once) then Stop, for
// one holding of a shard; never Start and Stop of one shard at once.
type Handler interface {
	// Start prepares a shard the node just took (opens its store, or
	// restores it from the backup g.Previous names when the local copy is
	// not the latest: compare its recorded token with g.Previous.Token).
	// Requests wait for MaySend, which refuses until Start has returned
	// nil, g.ReadyAt has passed and Ready has been called. ctx ends if the
	// shard is to be given up meanwhile. An error gives the shard up
	// (retried later).
	Start(ctx context.Context, g Grant) error
	// Ready is called once per holding whose Start returned nil, after
	// g.ReadyAt, with the shard's hold-offs read from etcd right then (a
	// node that could not write one in time may have written it during
	// the takeover wait): none of those sites may be asked before its
	// time. MaySend says yes from the moment Ready returns, not before.
	// It is called again, with the new ones only, for each hold-off of
	// the shard the node sees written later (its watch). The node's lock
	// is held: Ready must not call the node.
	Ready(shard int, holdOffs map[string]time.Time)
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
	// HoldOff are the shard's sites that asked a node to wait
	// (Node.PutHoldOff), with the time until which none of its requests
	// may go to them, as read when the node took the shard (Ready has
	// them again, read after the takeover wait).
	HoldOff map[string]time.Time
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
	// Settle is how long a node that has joined (again, after losing
	// its lease) waits before it takes unowned shards; meanwhile its
	// record says Settling, and live owners keep the shards the
	// assignment gives it. Nodes started together, each within Settle of
	// the first, then each take their share once, rather than the first
	// taking every shard and handing most of them over (a backup, a close
	// and a restore each) as the others join. A node alone for the whole
	// Settle takes every shard. Default TTL: nodes restarted together
	// after a crash join up to a TTL apart (each waits for its previous
	// lease to run out). Negative: none.
	Settle time.Duration
	// JoinWait is how long Start waits for the node's name to be free (a
	// restarted node's previous lease runs out within the TTL; default
	// 2 × TTL). A name still held then is a NameInUseError.
	JoinWait time.Duration
	// ExportsAtOnce bounds Handler.Export calls running at once (default 2).
	ExportsAtOnce int
	// HoldOffFile keeps the sites' waits (PutHoldOff) that etcd did not
	// take yet, so that a node killed before etcd answers again writes
	// them when it starts again (a file in the node's data directory;
	// "": memory only).
	HoldOffFile string

	leases  clientv3.Lease // nil: the client's (tests cut renewals through it)
	onRenew func(error)    // test hook: after each renewal attempt
	// onReconcile: test hook, after each reconcile that read the fleet
	// and acted on it, with the revision of its read.
	onReconcile func(rev int64)
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
	// paceSeen: the pace keys this node wrote last (paceGuess).
	paceSeenMu sync.Mutex
	paceSeen   map[string]*mvccpb.KeyValue

	holdMu  sync.Mutex
	pending map[holdOffKey]time.Time // hold-offs etcd did not take yet
	holdc   chan struct{}            // wakes holdOffLoop

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
	ready   bool // Handler.Ready has run: requests may start
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
	if o.Settle == 0 {
		o.Settle = t.TTL
	}
	if o.Settle < 0 {
		o.Settle = 0
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
		pending:   map[holdOffKey]time.Time{},
		holdc:     make(chan struct{}, 1),
	}
	if err := n.loadPending(); err != nil {
		return nil, err
	}
	n.flushPending(ctx) // before the join, which may wait
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
	n.loops.Add(6)
	go n.holdOffLoop()
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

// finishLocked asks holding h to end (idempotent); n.mu is held.
func (n *Node) finishLocked(h *held, lost bool) {
	if h.state == stopping {
		return
	}
	h.state, h.lost = stopping, lost
	close(h.end)
}

// wall strips the monotonic reading and rounds to milliseconds, for
// times written to etcd.
func wall(t time.Time) time.Time { return t.Round(0).UTC().Truncate(time.Millisecond) }
