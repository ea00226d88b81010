package fleet

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Status reads nodes (with lease time left), shards with owners, tokens,
// targets and state, and sums due counts per node; the metrics of a node
// say the same from inside.
func TestStatusAndMetrics(t *testing.T) {
	c, cli := newFleet(t, 4)
	ctx := context.Background()
	st, err := ReadStatus(ctx, cli, c.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	if st.Config == nil || st.Config.Shards != 4 || len(st.Shards) != 4 || len(st.Nodes) != 0 {
		t.Fatalf("empty fleet status %+v", st)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	ha, hb := newHandler("a", nil), newHandler("b", nil)
	a := startNode(t, cli, "a", ha, func(o *NodeOptions) { o.Metrics, o.Addr = m, "127.0.0.1:9464" })
	b := startNode(t, cli, "b", hb)
	waitFor(t, 10*time.Second, "2 shards each, started", func() bool {
		return len(ownedShards(a)) == 2 && len(ownedShards(b)) == 2 && ha.current() == 2 && hb.current() == 2
	})
	for i, s := range ownedShards(a) {
		g, _ := ha.grant(s)
		if err := answered(t, func() error { return a.PutShardState(ctx, g.Fence, ShardState{Backup: "backups/b"}) }); err != nil {
			t.Fatal(err)
		}
		if err := answered(t, func() error {
			return a.PutShardCounts(ctx, g.Fence, ShardCounts{Snapshot: "2026-12-04T100000Z", Due: int64(10 * (i + 1)), Waiting: 5})
		}); err != nil {
			t.Fatal(err)
		}
		// Counts under an earlier holding's token are refused by etcd.
		stale := NewFence(s, g.Token-1, func() error { return nil })
		if err := b.PutShardCounts(ctx, stale, ShardCounts{Due: 1}); err == nil {
			t.Errorf("counts of shard %d under a stale token were written", s)
		}
	}
	st, err = ReadStatus(ctx, cli, c.Endpoints)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 2 || st.Nodes[0].Name != "a" || st.Nodes[1].Name != "b" {
		t.Fatalf("nodes %+v", st.Nodes)
	}
	na := st.Nodes[0]
	if na.Addr != "127.0.0.1:9464" || na.Version != "test" || na.PID == 0 || na.LeaseTTLLeft <= 0 || na.LeaseTTLLeft > 2 {
		t.Errorf("node a %+v", na)
	}
	if !slices.Equal(na.Shards, ownedShards(a)) || !slices.Equal(na.Targets, na.Shards) {
		t.Errorf("node a shards %v targets %v, holds %v", na.Shards, na.Targets, ownedShards(a))
	}
	if na.Due == nil || *na.Due != 30 || na.Waiting == nil || *na.Waiting != 10 || st.Nodes[1].Due != nil {
		t.Errorf("due counts: a %v/%v, b %v", na.Due, na.Waiting, st.Nodes[1].Due)
	}
	for i, s := range ownedShards(a) {
		sh := st.Shards[s]
		if c := sh.Counts; c == nil || c.Due != int64(10*(i+1)) || c.Waiting != 5 || c.Token != sh.Token || c.Node != "a" || c.At.IsZero() {
			t.Errorf("shard %d counts %+v (token %d)", s, c, sh.Token)
		}
		// The counts are a key of their own: the backup's location stays.
		if sh.State == nil || sh.State.Backup != "backups/b" {
			t.Errorf("shard %d state %+v after its counts", s, sh.State)
		}
	}
	for _, sh := range st.Shards {
		holder := a
		if !slices.Contains(ownedShards(a), sh.Shard) {
			holder = b
		}
		if sh.Owner != holder.Name() || sh.Target != sh.Owner || sh.Token == 0 {
			t.Errorf("shard %+v", sh)
		}
		for _, o := range holder.Owned() {
			if o.Shard == sh.Shard && o.Token != sh.Token {
				t.Errorf("shard %d token %d in status, %d on the node", sh.Shard, sh.Token, o.Token)
			}
		}
	}
	// It is a JSON document with the names the README gives.
	raw, _ := json.Marshal(st)
	var doc map[string]any
	json.Unmarshal(raw, &doc)
	for _, k := range []string{"endpoints", "revision", "config", "nodes", "shards", "rebuild"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("status JSON lacks %q", k)
		}
	}

	got := gather(t, reg)
	want := map[string]float64{
		"mapthenet_fleet_shards_owned":                        2,
		"mapthenet_fleet_requests_allowed":                    1,
		"mapthenet_fleet_sessions_total":                      1,
		"mapthenet_fleet_shard_changes_total{change=lost}":    0,
		"mapthenet_fleet_lease_renewals_total{result=failed}": 0,
		"mapthenet_fleet_exports_total{result=exported}":      0,
		"mapthenet_fleet_ip_pace_total{result=ok}":            0,
		"mapthenet_fleet_shards_ready":                        0, // inside the takeover wait
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	// a took what it could alone, then handed b its share.
	if acq, rel := got["mapthenet_fleet_shard_changes_total{change=acquired}"], got["mapthenet_fleet_shard_changes_total{change=released}"]; acq-rel != 2 || acq < 2 {
		t.Errorf("acquired %v, released %v: a holds 2", acq, rel)
	}
	if d := got["mapthenet_fleet_lease_deadline_seconds"]; d <= 0 || d > 2 {
		t.Errorf("deadline in %v s", d)
	}
	waitFor(t, 5*time.Second, "a renewal counted", func() bool {
		return gather(t, reg)["mapthenet_fleet_lease_renewals_total{result=ok}"] >= 1
	})
}

func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			key := f.GetName()
			if len(m.GetLabel()) > 0 {
				key += "{"
				for i, l := range m.GetLabel() {
					if i > 0 {
						key += ","
					}
					key += l.GetName() + "=" + l.GetValue()
				}
				key += "}"
			}
			switch {
			case m.Counter != nil:
				out[key] = m.GetCounter().GetValue()
			case m.Gauge != nil:
				out[key] = m.GetGauge().GetValue()
			}
		}
	}
	return out
}
