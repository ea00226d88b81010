package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The rebuild lock is one holder's at a time; a second rebuild is told
// who holds it; it is free again after Unlock.
func TestRebuildLock(t *testing.T) {
	_, cli := newFleet(t, 2)
	ctx := context.Background()
	now := time.Date(2026, 12, 4, 3, 15, 0, 0, time.UTC)
	l, err := LockRebuild(ctx, cli, "mapthenet rebuild", 2*time.Second, now)
	if err != nil {
		t.Fatal(err)
	}
	_, err = LockRebuild(ctx, cli, "mapthenet rebuild", 2*time.Second, now)
	var busy *RebuildBusyError
	if !errors.As(err, &busy) || busy.Holder.Command != "mapthenet rebuild" || !busy.Holder.Since.Equal(now) || busy.Holder.PID == 0 {
		t.Fatalf("second lock: %v (%+v), want RebuildBusyError naming the holder", err, busy)
	}
	if !strings.Contains(err.Error(), "since 2026-12-04T03:15:00Z") {
		t.Errorf("busy error %q", err)
	}
	st, err := ReadStatus(ctx, cli, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rebuild.LockHolder == nil || st.Rebuild.LockToken != l.Token() {
		t.Errorf("status lock %+v token %d, want token %d", st.Rebuild.LockHolder, st.Rebuild.LockToken, l.Token())
	}
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l2, err := LockRebuild(ctx, cli, "mapthenet rebuild", 2*time.Second, now)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	if l2.Token() <= l.Token() {
		t.Errorf("lock token %d after %d", l2.Token(), l.Token())
	}
	l2.Unlock(ctx)
}

func TestRebuildBarrier(t *testing.T) {
	_, cli := newFleet(t, 4)
	ctx := context.Background()
	ha, hb := newHandler("a", nil), newHandler("b", nil)
	a := startNode(t, cli, "a", ha)
	b := startNode(t, cli, "b", hb)
	waitFor(t, 10*time.Second, "a and b hold 2 shards each", func() bool {
		return len(ownedShards(a)) == 2 && len(ownedShards(b)) == 2 && ha.started()+hb.started() >= 4
	})
	lock, err := LockRebuild(ctx, cli, "mapthenet rebuild", 2*time.Second, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Unlock(ctx)

	t.Run("success", func(t *testing.T) {
		answers, err := lock.CollectExports(ctx, "2026-12-04T031500Z", "file:///parts/", 10*time.Second, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if len(answers) != 4 {
			t.Fatalf("%d answers", len(answers))
		}
		for s, ans := range answers {
			owner := "a"
			if !containsInt(ownedShards(a), s) {
				owner = "b"
			}
			if ans.Shard != s || ans.Status != AnswerExported || ans.Node != owner || ans.Part.Rows != int64(100+s) || ans.Token == 0 {
				t.Errorf("answer %d: %+v", s, ans)
			}
		}
		st, err := ReadStatus(ctx, cli, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, sh := range st.Shards {
			if sh.LastExport == nil || sh.LastExport.ID != "2026-12-04T031500Z" || sh.LastExport.Token != sh.Token {
				t.Errorf("shard %d last export %+v", sh.Shard, sh.LastExport)
			}
		}
		if st.Rebuild.Last == nil || !st.Rebuild.Last.OK || st.Rebuild.Last.Exported != 4 || len(st.Rebuild.Open) != 0 {
			t.Errorf("rebuild status %+v", st.Rebuild)
		}
		left, _ := cli.Get(ctx, requestsPrefix, clientv3.WithPrefix())
		answersLeft, _ := cli.Get(ctx, answersPrefix, clientv3.WithPrefix())
		if len(left.Kvs)+len(answersLeft.Kvs) != 0 {
			t.Errorf("barrier keys left: %d requests, %d answers", len(left.Kvs), len(answersLeft.Kvs))
		}
	})

	t.Run("a shard fails", func(t *testing.T) {
		s := ownedShards(b)[0]
		hb.mu.Lock()
		hb.exportFail[s] = errors.New("disk full")
		hb.mu.Unlock()
		defer func() {
			hb.mu.Lock()
			delete(hb.exportFail, s)
			hb.mu.Unlock()
		}()
		start := time.Now()
		_, err := lock.CollectExports(ctx, "2026-12-04T031600Z", "", time.Minute, time.Now())
		if err == nil || !strings.Contains(err.Error(), "disk full") || !strings.Contains(err.Error(), "node b") {
			t.Fatalf("err = %v, want shard %d's failure", err, s)
		}
		if time.Since(start) > 10*time.Second {
			t.Errorf("a failed shard took %v to fail the barrier: it should not wait for the timeout", time.Since(start))
		}
		st, _ := ReadStatus(ctx, cli, nil)
		if st.Rebuild.Last == nil || st.Rebuild.Last.OK || st.Rebuild.Last.ID != "2026-12-04T031600Z" {
			t.Errorf("last rebuild %+v", st.Rebuild.Last)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		hold := make(chan struct{})
		ha.mu.Lock()
		ha.exportHold = hold
		ha.mu.Unlock()
		defer func() {
			close(hold)
			ha.mu.Lock()
			ha.exportHold = nil
			ha.mu.Unlock()
		}()
		_, err := lock.CollectExports(ctx, "2026-12-04T031700Z", "", time.Second, time.Now())
		if err == nil || !strings.Contains(err.Error(), "2 of 4 shards did not export") {
			t.Fatalf("err = %v, want a's 2 shards named missing", err)
		}
		if want := fmt.Sprintf("(shards %d, %d)", ownedShards(a)[0], ownedShards(a)[1]); !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	})

	t.Run("bad id", func(t *testing.T) {
		if _, err := lock.CollectExports(ctx, "bad/id", "", time.Second, time.Now()); err == nil {
			t.Error("an id with a slash was accepted")
		}
	})
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
