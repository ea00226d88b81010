package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/concurrency"
)

// Holder names who holds the rebuild lock (the value of its key).
type Holder struct {
	Command string    `json:"command"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
}

// ExportRequest is a fleet rebuild's barrier (rebuild/requests/<id>):
// every shard's owner answers with its part.
type ExportRequest struct {
	ID       string    `json:"id"`
	AskedAt  time.Time `json:"asked_at"`
	Deadline time.Time `json:"deadline"`
	Shards   int       `json:"shards"`
	Dest     string    `json:"dest,omitempty"` // where parts go (the snapshot store's URI of this rebuild's parts)
	Lease    int64     `json:"lease"`          // the rebuild's lease: answers are bound to it
	Holder   Holder    `json:"holder"`
}

// Part is where a shard's export went.
type Part struct {
	URI  string `json:"uri"`
	Rows int64  `json:"rows"`
}

// ExportAnswer is one shard owner's answer (rebuild/answers/<id>/<NNNN>).
type ExportAnswer struct {
	ID     string    `json:"id"`
	Shard  int       `json:"shard"`
	Token  int64     `json:"token"`
	Node   string    `json:"node"`
	Status string    `json:"status"` // AnswerExported or AnswerFailed
	Part   Part      `json:"part"`
	Error  string    `json:"error,omitempty"`
	At     time.Time `json:"at"`
}

// Answer statuses.
const (
	AnswerExported = "exported"
	AnswerFailed   = "failed"
)

// RebuildSummary is rebuild/last: how the last fleet barrier ended.
type RebuildSummary struct {
	ID         string    `json:"id"`
	AskedAt    time.Time `json:"asked_at"`
	FinishedAt time.Time `json:"finished_at"`
	OK         bool      `json:"ok"`
	Error      string    `json:"error,omitempty"`
	Exported   int       `json:"exported"`
	Shards     int       `json:"shards"`
}

// RebuildLock is the fleet's rebuild lock: a concurrency.Mutex on
// rebuild/lock whose session lease keeps it (and the rebuild's barrier
// keys) alive while the rebuild runs.
type RebuildLock struct {
	cli   *clientv3.Client
	sess  *concurrency.Session
	mu    *concurrency.Mutex
	token int64
}

// LockRebuild takes the fleet's rebuild lock without waiting: another
// holder is a *RebuildBusyError naming it. ttl is the lock's lease (whole
// seconds, at least 2; 0: 10 s): if the rebuild dies, the lock is free
// that long after.
func LockRebuild(ctx context.Context, cli *clientv3.Client, command string, ttl time.Duration, now time.Time) (*RebuildLock, error) {
	if ttl == 0 {
		ttl = DefaultTTL
	}
	if ttl < 2*time.Second {
		return nil, fmt.Errorf("rebuild lock TTL %v: at least 2s", ttl)
	}
	sess, err := concurrency.NewSession(cli, concurrency.WithTTL(int(ttl/time.Second)), concurrency.WithContext(context.WithoutCancel(ctx)))
	if err != nil {
		return nil, fmt.Errorf("fleet rebuild lock: %w", err)
	}
	mu := concurrency.NewMutex(sess, rebuildLockPfx)
	if err := mu.TryLock(ctx); err != nil {
		defer sess.Close()
		if !errors.Is(err, concurrency.ErrLocked) {
			return nil, fmt.Errorf("fleet rebuild lock: %w", err)
		}
		busy := &RebuildBusyError{}
		if resp, gerr := cli.Get(ctx, rebuildLockPfx+"/", clientv3.WithFirstCreate()...); gerr == nil && len(resp.Kvs) == 1 {
			json.Unmarshal(resp.Kvs[0].Value, &busy.Holder)
		}
		return nil, busy
	}
	host, _ := os.Hostname()
	raw, _ := json.Marshal(Holder{Command: command, Host: host, PID: os.Getpid(), Since: wall(now)})
	// The mutex wrote its key empty; say who holds it (same lease).
	if _, err := cli.Put(ctx, mu.Key(), string(raw), clientv3.WithLease(sess.Lease())); err != nil {
		mu.Unlock(ctx)
		sess.Close()
		return nil, fmt.Errorf("fleet rebuild lock: %w", err)
	}
	return &RebuildLock{cli: cli, sess: sess, mu: mu, token: mu.Header().Revision}, nil
}

// Token is the lock's fencing token (its key's create revision).
func (l *RebuildLock) Token() int64 { return l.token }

// Done is closed if the lock's lease is lost (etcd unreachable past its
// TTL): the rebuild must then stop without publishing.
func (l *RebuildLock) Done() <-chan struct{} { return l.sess.Done() }

// Unlock releases the lock and revokes its lease.
func (l *RebuildLock) Unlock(ctx context.Context) error {
	err := l.mu.Unlock(ctx)
	if cerr := l.sess.Close(); err == nil {
		err = cerr
	}
	return err
}

// checkRebuildID: an id is one key segment.
func checkRebuildID(id string) error {
	if id == "" || len(id) > 64 || strings.ContainsAny(id, "/ \t\n") {
		return fmt.Errorf("rebuild id %q: want 1 to 64 characters, no '/' or spaces", id)
	}
	return nil
}

// CollectExports runs the barrier of rebuild id: it writes the request
// (bound to the lock's lease, so it vanishes if the rebuild dies), waits
// until every one of the fleet's shards has an answer, and returns the
// answers in shard order. It fails as soon as one shard answers failed,
// or when timeout passes with shards unanswered (naming them), or when
// the lock is lost. Either way it deletes the request and its answers
// and records the outcome in rebuild/last.
func (l *RebuildLock) CollectExports(ctx context.Context, id, dest string, timeout time.Duration, now time.Time) ([]ExportAnswer, error) {
	if err := checkRebuildID(id); err != nil {
		return nil, err
	}
	cfg, _, err := ReadConfig(ctx, l.cli)
	if err != nil {
		return nil, err
	}
	var holder Holder
	if resp, err := l.cli.Get(ctx, l.mu.Key()); err == nil && len(resp.Kvs) == 1 {
		json.Unmarshal(resp.Kvs[0].Value, &holder)
	}
	req := ExportRequest{ID: id, AskedAt: wall(now), Deadline: wall(now.Add(timeout)), Shards: cfg.Shards,
		Dest: dest, Lease: int64(l.sess.Lease()), Holder: holder}
	raw, _ := json.Marshal(req)
	key := requestKey(id)
	put, err := l.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
		Then(clientv3.OpPut(key, string(raw), clientv3.WithLease(l.sess.Lease()))).Commit()
	if err != nil {
		return nil, fmt.Errorf("fleet rebuild %s: asking for exports: %w", id, err)
	}
	if !put.Succeeded {
		return nil, fmt.Errorf("fleet rebuild %s: a barrier with this id is already open", id)
	}
	answers, werr := l.waitAnswers(ctx, id, cfg.Shards, timeout)
	sum := RebuildSummary{ID: id, AskedAt: req.AskedAt, FinishedAt: wall(time.Now()), OK: werr == nil, Shards: cfg.Shards}
	for _, a := range answers {
		if a.Status == AnswerExported {
			sum.Exported++
		}
	}
	if werr != nil {
		sum.Error = werr.Error()
	}
	sraw, _ := json.Marshal(sum)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	l.cli.Txn(cctx).Then(
		clientv3.OpDelete(key),
		clientv3.OpDelete(answersKeyPrefix(id), clientv3.WithPrefix()),
		clientv3.OpPut(rebuildLastKey, string(sraw)),
	).Commit()
	if werr != nil {
		return nil, werr
	}
	out := make([]ExportAnswer, 0, len(answers))
	for s := 0; s < cfg.Shards; s++ {
		out = append(out, answers[s])
	}
	return out, nil
}

// waitAnswers reads and then watches the answers of rebuild id.
func (l *RebuildLock) waitAnswers(ctx context.Context, id string, shards int, timeout time.Duration) (map[int]ExportAnswer, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answers := map[int]ExportAnswer{}
	pfx := answersKeyPrefix(id)
	take := func(key string, value []byte) error {
		var a ExportAnswer
		if err := json.Unmarshal(value, &a); err != nil || a.Shard < 0 || a.Shard >= shards || key != answerKey(id, a.Shard) {
			return nil // not an answer of ours; ignore it
		}
		answers[a.Shard] = a
		if a.Status != AnswerExported {
			return fmt.Errorf("fleet rebuild %s: shard %d failed to export on node %s: %s", id, a.Shard, a.Node, a.Error)
		}
		return nil
	}
	for len(answers) < shards {
		// Read what is there, then watch from just after that read, so
		// that no answer falls between the two; again after any break.
		resp, err := l.cli.Get(ctx, pfx, clientv3.WithPrefix())
		if err != nil {
			if ctx.Err() != nil {
				return answers, missingError(id, shards, answers, timeout)
			}
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		for _, kv := range resp.Kvs {
			if err := take(string(kv.Key), kv.Value); err != nil {
				return answers, err
			}
		}
		if len(answers) == shards {
			break
		}
		wctx, wcancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
		wch := l.cli.Watch(wctx, pfx, clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1))
	watching:
		for len(answers) < shards {
			select {
			case <-l.sess.Done():
				wcancel()
				return answers, fmt.Errorf("fleet rebuild %s: lost the rebuild lock (etcd unreachable past its lease)", id)
			case wr, ok := <-wch:
				if !ok || wr.Err() != nil {
					break watching
				}
				for _, ev := range wr.Events {
					if ev.Type != clientv3.EventTypePut {
						continue
					}
					if err := take(string(ev.Kv.Key), ev.Kv.Value); err != nil {
						wcancel()
						return answers, err
					}
				}
			}
		}
		wcancel()
		if ctx.Err() != nil {
			return answers, missingError(id, shards, answers, timeout)
		}
	}
	return answers, nil
}

func missingError(id string, shards int, answers map[int]ExportAnswer, timeout time.Duration) error {
	var missing []string
	for s := 0; s < shards; s++ {
		if _, ok := answers[s]; !ok {
			missing = append(missing, fmt.Sprint(s))
		}
	}
	shown := missing
	if len(shown) > 10 {
		shown = append(slices.Clone(shown[:10]), "...")
	}
	return fmt.Errorf("fleet rebuild %s: %d of %d shards did not export within %v (shards %s): is every shard owned (mapthenet fleet status)?",
		id, len(missing), shards, timeout, strings.Join(shown, ", "))
}
