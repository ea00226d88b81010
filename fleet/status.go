package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Status is what `mapthenet fleet status` shows: one consistent read of
// the fleet's keys, plus each node's lease time left.
type Status struct {
	Endpoints []string      `json:"endpoints"`
	Revision  int64         `json:"revision"` // etcd revision of the read
	Config    *Config       `json:"config"`   // nil: no fleet here yet
	Nodes     []NodeStatus  `json:"nodes"`
	Shards    []ShardStatus `json:"shards"`
	Rebuild   RebuildStatus `json:"rebuild"`
}

// NodeStatus is one live node.
type NodeStatus struct {
	NodeInfo
	// LeaseTTLLeft is how long the node's lease lasts without another
	// renewal, as etcd's leader counts it (seconds; -1: the lease is gone).
	LeaseTTLLeft float64 `json:"lease_ttl_left_s"`
	Shards       []int   `json:"shards"` // held now
	Targets      []int   `json:"targets"`
	// Due and Waiting add up the counts of the shards it holds, those it
	// made under its holding (nil: none counted yet).
	Due     *int64 `json:"due"`
	Waiting *int64 `json:"waiting"`
}

// ShardStatus is one shard.
type ShardStatus struct {
	Shard      int           `json:"shard"`
	Owner      string        `json:"owner"`  // "": none now
	Token      int64         `json:"token"`  // the owner key's create revision (0: no owner)
	Target     string        `json:"target"` // where the assignment puts it now
	Handoff    *Handoff      `json:"handoff"`
	State      *ShardState   `json:"state"`
	LastExport *ExportRecord `json:"last_export"`
	// Counts are the shard's due and waiting domains as an owner last
	// counted them (nil: never; Counts.Token other than Token: counted by
	// an earlier holding, not yet by the owner now).
	Counts *ShardCounts `json:"counts"`
}

// RebuildStatus is the fleet rebuild's lock, open barriers and last
// outcome.
type RebuildStatus struct {
	LockHolder *Holder         `json:"lock_holder"`
	Open       []ExportRequest `json:"open"`
	Answers    map[string]int  `json:"answers"` // per open barrier: shards answered so far
	Last       *RebuildSummary `json:"last"`
	LockToken  int64           `json:"lock_token,omitempty"`
}

// ReadStatus reads the fleet's status from cli (endpoints is only
// reported). A fleet not initialised yet gives a Status with a nil
// Config.
func ReadStatus(ctx context.Context, cli *clientv3.Client, endpoints []string) (*Status, error) {
	resp, err := cli.Txn(ctx).Then(
		clientv3.OpGet(configKey),
		clientv3.OpGet(nodesPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(shardsPrefix, clientv3.WithPrefix()),
		clientv3.OpGet(rebuildPrefix, clientv3.WithPrefix()),
	).Commit()
	if err != nil {
		return nil, fmt.Errorf("reading the fleet from %s: %w", FormatURL(endpoints), err)
	}
	st := &Status{Endpoints: endpoints, Revision: resp.Header.Revision, Nodes: []NodeStatus{}, Shards: []ShardStatus{},
		Rebuild: RebuildStatus{Open: []ExportRequest{}, Answers: map[string]int{}}}
	if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
		c, err := parseConfig(kvs[0].Value)
		if err != nil {
			return nil, err
		}
		st.Config = &c
	}
	var names []string
	leases := map[string]int64{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		var ns NodeStatus
		json.Unmarshal(kv.Value, &ns.NodeInfo)
		ns.Name = strings.TrimPrefix(string(kv.Key), nodesPrefix)
		ns.Lease = fmt.Sprintf("%x", kv.Lease)
		ns.Shards, ns.Targets = []int{}, []int{}
		leases[ns.Name] = kv.Lease
		names = append(names, ns.Name)
		st.Nodes = append(st.Nodes, ns)
	}
	k := 0
	if st.Config != nil {
		k = st.Config.Shards
	}
	shards := make([]ShardStatus, k)
	for s := range shards {
		shards[s].Shard = s
	}
	for _, kv := range resp.Responses[2].GetResponseRange().Kvs {
		s, leaf, ok := parseShardKey(string(kv.Key))
		if !ok || s >= k {
			continue
		}
		sh := &shards[s]
		switch leaf {
		case ownerLeaf:
			sh.Owner, sh.Token = string(kv.Value), kv.CreateRevision
		case handoffLeaf:
			var h Handoff
			if json.Unmarshal(kv.Value, &h) == nil {
				sh.Handoff = &h
			}
		case stateLeaf:
			var x ShardState
			if json.Unmarshal(kv.Value, &x) == nil {
				sh.State = &x
			}
		case countsLeaf:
			var x ShardCounts
			if json.Unmarshal(kv.Value, &x) == nil {
				sh.Counts = &x
			}
		case exportLeaf:
			var x ExportRecord
			if json.Unmarshal(kv.Value, &x) == nil {
				sh.LastExport = &x
			}
		}
	}
	current := make([]string, k)
	for s := range shards {
		current[s] = shards[s].Owner
	}
	targets := Assign(names, current, k)
	byName := map[string]*NodeStatus{}
	for i := range st.Nodes {
		byName[st.Nodes[i].Name] = &st.Nodes[i]
	}
	for s := range shards {
		shards[s].Target = targets[s]
		if ns := byName[targets[s]]; ns != nil {
			ns.Targets = append(ns.Targets, s)
		}
		if ns := byName[shards[s].Owner]; ns != nil {
			ns.Shards = append(ns.Shards, s)
			if c := shards[s].Counts; c != nil && c.Token == shards[s].Token {
				ns.Due = addCount(ns.Due, c.Due)
				ns.Waiting = addCount(ns.Waiting, c.Waiting)
			}
		}
	}
	st.Shards = shards
	readRebuild(&st.Rebuild, resp.Responses[3].GetResponseRange().Kvs)
	for i := range st.Nodes {
		ns := &st.Nodes[i]
		ns.LeaseTTLLeft = -1
		if ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(leases[ns.Name])); err == nil && ttl.TTL >= 0 {
			ns.LeaseTTLLeft = float64(ttl.TTL)
		}
	}
	return st, nil
}

func addCount(sum *int64, x int64) *int64 {
	if sum != nil {
		x += *sum
	}
	return &x
}

// readRebuild sorts the rebuild/ keys into rb.
func readRebuild(rb *RebuildStatus, kvs []*mvccpb.KeyValue) {
	var lockRev int64
	for _, kv := range kvs {
		key := string(kv.Key)
		switch {
		case strings.HasPrefix(key, rebuildLockPfx+"/"):
			if lockRev == 0 || kv.CreateRevision < lockRev {
				var h Holder
				json.Unmarshal(kv.Value, &h)
				rb.LockHolder, rb.LockToken, lockRev = &h, kv.CreateRevision, kv.CreateRevision
			}
		case strings.HasPrefix(key, requestsPrefix):
			var r ExportRequest
			if json.Unmarshal(kv.Value, &r) == nil {
				rb.Open = append(rb.Open, r)
			}
		case strings.HasPrefix(key, answersPrefix):
			id, _, _ := strings.Cut(strings.TrimPrefix(key, answersPrefix), "/")
			rb.Answers[id]++
		case key == rebuildLastKey:
			var s RebuildSummary
			if json.Unmarshal(kv.Value, &s) == nil {
				rb.Last = &s
			}
		}
	}
	slices.SortFunc(rb.Open, func(a, b ExportRequest) int { return strings.Compare(a.ID, b.ID) })
}

// ShardList prints shard numbers compactly: 0-3,7,9-10.
func ShardList(shards []int) string {
	if len(shards) == 0 {
		return "none"
	}
	var b strings.Builder
	for i := 0; i < len(shards); {
		j := i
		for j+1 < len(shards) && shards[j+1] == shards[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(shards[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(shards[j]))
		}
		i = j + 1
	}
	return b.String()
}
