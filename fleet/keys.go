package fleet

import (
	"fmt"
	"strconv"
	"strings"
)

// Prefix is the root of every key the fleet keeps in etcd. The layout under
// it is a contract other tools may read (DESIGN.md, "Fleet coordination");
// a change that breaks a reader gets a new version (/mapthenet/v2/).
const Prefix = "/mapthenet/v1/"

// The keys (doc.go describes what each holds and who writes it).
const (
	configKey       = Prefix + "config"
	secretKey       = Prefix + "secret"
	nodesPrefix     = Prefix + "nodes/"
	shardsPrefix    = Prefix + "shards/"
	paceIPPrefix    = Prefix + "pace/ip/"
	rebuildPrefix   = Prefix + "rebuild/"
	rebuildLockPfx  = Prefix + "rebuild/lock" // concurrency.Mutex adds "/<lease>"
	requestsPrefix  = Prefix + "rebuild/requests/"
	answersPrefix   = Prefix + "rebuild/answers/"
	rebuildLastKey  = Prefix + "rebuild/last"
	ownerLeaf       = "owner"
	handoffLeaf     = "handoff"
	stateLeaf       = "state"
	exportLeaf      = "export"
	countsLeaf      = "counts"
	shardKeyDigits  = 4 // shards/0007/owner: fixed width, so keys sort by shard
	maxShardsFormat = 9999
)

func nodeKey(name string) string { return nodesPrefix + name }

// shardKey is shards/<NNNN>/<leaf>.
func shardKey(shard int, leaf string) string {
	return fmt.Sprintf("%s%0*d/%s", shardsPrefix, shardKeyDigits, shard, leaf)
}

// parseShardKey splits shards/<NNNN>/<leaf>; ok is false for any other key.
func parseShardKey(key string) (shard int, leaf string, ok bool) {
	rest, found := strings.CutPrefix(key, shardsPrefix)
	if !found {
		return 0, "", false
	}
	num, leaf, found := strings.Cut(rest, "/")
	if !found || len(num) != shardKeyDigits {
		return 0, "", false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, "", false
	}
	return n, leaf, true
}

func requestKey(id string) string { return requestsPrefix + id }

func answersKeyPrefix(id string) string { return answersPrefix + id + "/" }

func answerKey(id string, shard int) string {
	return fmt.Sprintf("%s%0*d", answersKeyPrefix(id), shardKeyDigits, shard)
}
