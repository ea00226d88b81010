package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// FormatVersion is the version of the key layout under Prefix, kept in
// Config.Format: a node refuses a fleet of another format.
const FormatVersion = 1

// MaxShards bounds a fleet's shard count (keys carry four digits).
const MaxShards = 1024

// Config is the fleet's own record (Prefix+"config"), written once by
// Init.
type Config struct {
	Format    int       `json:"format"`
	Shards    int       `json:"shards"`
	FleetID   string    `json:"fleet_id"`
	CreatedAt time.Time `json:"created_at"`
}

// Init creates the fleet at cli's etcd: the config with k shards and the
// pace secret, in one transaction that succeeds only if there is no
// config yet. It returns the config in force and whether this call made
// it; a fleet that already exists with another shard count is an error
// (the shard count is fixed when the fleet is made).
func Init(ctx context.Context, cli *clientv3.Client, k int, now time.Time) (Config, bool, error) {
	if k < 1 || k > MaxShards {
		return Config{}, false, fmt.Errorf("--shards %d: want 1 to %d", k, MaxShards)
	}
	id := make([]byte, 8)
	secret := make([]byte, 32)
	if _, err := rand.Read(id); err != nil {
		return Config{}, false, err
	}
	if _, err := rand.Read(secret); err != nil {
		return Config{}, false, err
	}
	c := Config{Format: FormatVersion, Shards: k, FleetID: hex.EncodeToString(id), CreatedAt: now.UTC().Truncate(time.Second)}
	raw, err := json.Marshal(c)
	if err != nil {
		return Config{}, false, err
	}
	resp, err := cli.Txn(ctx).
		If(clientv3.Compare(clientv3.CreateRevision(configKey), "=", 0)).
		Then(clientv3.OpPut(configKey, string(raw)), clientv3.OpPut(secretKey, hex.EncodeToString(secret))).
		Else(clientv3.OpGet(configKey)).Commit()
	if err != nil {
		return Config{}, false, fmt.Errorf("fleet init: %w", err)
	}
	if resp.Succeeded {
		return c, true, nil
	}
	kvs := resp.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return Config{}, false, fmt.Errorf("fleet init: config vanished while being read")
	}
	have, err := parseConfig(kvs[0].Value)
	if err != nil {
		return Config{}, false, err
	}
	if have.Shards != k {
		return have, false, fmt.Errorf("the fleet already exists with %d shards (fleet id %s), not %d: the shard count is fixed when the fleet is made", have.Shards, have.FleetID, k)
	}
	return have, false, nil
}

// ReadConfig reads the fleet's config and pace secret (ErrNotInitialised
// when there is none).
func ReadConfig(ctx context.Context, cli *clientv3.Client) (Config, []byte, error) {
	resp, err := cli.Txn(ctx).Then(clientv3.OpGet(configKey), clientv3.OpGet(secretKey)).Commit()
	if err != nil {
		return Config{}, nil, fmt.Errorf("reading the fleet config: %w", err)
	}
	ckvs := resp.Responses[0].GetResponseRange().Kvs
	if len(ckvs) == 0 {
		return Config{}, nil, ErrNotInitialised
	}
	c, err := parseConfig(ckvs[0].Value)
	if err != nil {
		return Config{}, nil, err
	}
	var secret []byte
	if skvs := resp.Responses[1].GetResponseRange().Kvs; len(skvs) == 1 {
		secret, err = hex.DecodeString(string(skvs[0].Value))
	}
	if err != nil || len(secret) < 16 {
		return Config{}, nil, fmt.Errorf("fleet %s: its pace secret (%s) is missing or damaged", c.FleetID, secretKey)
	}
	return c, secret, nil
}

func parseConfig(raw []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(raw, &c); err != nil {
		return Config{}, fmt.Errorf("fleet config %s: %v", configKey, err)
	}
	if c.Format != FormatVersion {
		return Config{}, fmt.Errorf("fleet config %s: format %d, this mapthenet reads format %d", configKey, c.Format, FormatVersion)
	}
	if c.Shards < 1 || c.Shards > MaxShards {
		return Config{}, fmt.Errorf("fleet config %s: %d shards, want 1 to %d", configKey, c.Shards, MaxShards)
	}
	return c, nil
}

// Dial makes an etcd client for endpoints (from ParseURL). It does not
// wait for a connection: the first call fails if none can be made in its
// context's time. The client's own log is discarded; the fleet logs what
// matters through its slog.Logger.
func Dial(endpoints []string) (*clientv3.Client, error) {
	return clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		Logger:               zap.NewNop(),
	})
}
