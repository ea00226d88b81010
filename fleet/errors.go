package fleet

import (
	"errors"
	"fmt"
	"time"
)

// Why a node may not act on a shard now (NotNowError wraps one of them).
var (
	// ErrNoSession: the node has no lease in etcd (joining, or rejoining
	// after its lease was lost).
	ErrNoSession = errors.New("no fleet session")
	// ErrDeadline: the node's last lease renewal is too old; it may no
	// longer assume it holds its shards (etcd unreachable or without
	// quorum). Requests resume by themselves once a renewal succeeds.
	ErrDeadline = errors.New("lease deadline passed")
	// ErrNotOwner: the node does not hold the shard.
	ErrNotOwner = errors.New("shard not owned by this node")
	// ErrStarting: the node took the shard and is still preparing it.
	ErrStarting = errors.New("shard starting")
	// ErrStopping: the node is giving the shard up.
	ErrStopping = errors.New("shard stopping")
	// ErrTakeoverWait: the node took the shard and waits, before its
	// first request there, for any request of the previous owner to be
	// over (see Timing.TakeoverWait).
	ErrTakeoverWait = errors.New("waiting after takeover")
	// ErrTokenChanged: the fence's token is not the shard's current one
	// on this node (it was lost and taken again, or moved).
	ErrTokenChanged = errors.New("fencing token no longer current")
)

// NotNowError says why a request (or a commit) for Shard may not go ahead
// now, and when to ask again if that is known (Until; zero: unknown, ask
// again later or wait for the shard to be granted).
type NotNowError struct {
	Shard int
	Err   error
	Until time.Time
}

func (e *NotNowError) Error() string {
	if e.Until.IsZero() {
		return fmt.Sprintf("shard %d: %v", e.Shard, e.Err)
	}
	return fmt.Sprintf("shard %d: %v until %s", e.Shard, e.Err, e.Until.UTC().Format(time.RFC3339Nano))
}

func (e *NotNowError) Unwrap() error { return e.Err }

// ErrNotInitialised: no fleet at these etcd endpoints (mapthenet fleet
// init makes one).
var ErrNotInitialised = errors.New("no mapthenet fleet here: run mapthenet fleet init --fleet URL --shards K first")

// NameInUseError: another live process holds the node name.
type NameInUseError struct {
	Name string
	Held NodeInfo
}

func (e *NameInUseError) Error() string {
	return fmt.Sprintf("node name %q is in use by a live node (pid %d on %s, since %s): give each node its own --node",
		e.Name, e.Held.PID, e.Held.Host, e.Held.StartedAt.UTC().Format(time.RFC3339))
}

// RebuildBusyError: another rebuild holds the fleet's rebuild lock.
type RebuildBusyError struct{ Holder Holder }

func (e *RebuildBusyError) Error() string {
	if e.Holder.Host == "" {
		return "another fleet rebuild holds the lock"
	}
	return fmt.Sprintf("another fleet rebuild holds the lock: %s (pid %d on %s, since %s)",
		e.Holder.Command, e.Holder.PID, e.Holder.Host, e.Holder.Since.UTC().Format(time.RFC3339))
}
