// Package etcdtest starts real etcd clusters on loopback for tests: either
// members embedded in the test process (go.etcd.io/etcd/server/v3/embed:
// fast, no install) or processes of an etcd binary (Debian's etcd-server,
// as an operator runs it). Only tests import it: the embedded server is
// big, and the mapthenet binary links only etcd's client.
package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// RequireEnv, set to 1 (as .ci/run does), makes tests that need the etcd
// binary fail rather than skip when it is missing.
const RequireEnv = "MAPTHENET_REQUIRE_ETCD"

// BinaryEnv names the etcd binary to run (default: etcd on PATH).
const BinaryEnv = "MAPTHENET_ETCD"

// Cluster is an etcd cluster on 127.0.0.1, stopped when the test ends.
type Cluster struct {
	t         testing.TB
	Endpoints []string // client URLs, one per member
	members   []member
}

type member interface {
	start() error
	kill()
}

// URL is the cluster as a --fleet value.
func (c *Cluster) URL() string {
	hps := make([]string, len(c.Endpoints))
	for i, e := range c.Endpoints {
		hps[i] = strings.TrimPrefix(e, "http://")
	}
	return "etcd://" + strings.Join(hps, ",")
}

// Client is a client of every member, closed when the test ends.
func (c *Cluster) Client(t testing.TB) *clientv3.Client {
	return c.ClientOf(t, c.Endpoints...)
}

// ClientOf is a client of the given endpoints only.
func (c *Cluster) ClientOf(t testing.TB, endpoints ...string) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// Kill stops member i at once: a process gets SIGKILL, an embedded member
// stops without handing its leadership on.
func (c *Cluster) Kill(i int) { c.members[i].kill() }

// Restart starts member i again on its data directory and waits until it
// serves.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if err := c.members[i].start(); err != nil {
		c.t.Fatalf("restarting etcd member %d: %v", i, err)
	}
}

// WaitHealthy waits until a quorum answers a linearizable read.
func (c *Cluster) WaitHealthy(t testing.TB, within time.Duration) {
	t.Helper()
	cli := c.Client(t)
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cli.Get(ctx, "health")
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd cluster not healthy within %v: %v", within, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// freePorts picks n free loopback ports. Another process may take one
// before the member binds it: the start is retried with new ports then.
func freePorts(n int) ([]int, error) {
	var ports []int
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

type layout struct {
	names          []string
	clients, peers []string
	initial        string
}

func newLayout(n int) (layout, error) {
	ports, err := freePorts(2 * n)
	if err != nil {
		return layout{}, err
	}
	var l layout
	var parts []string
	for i := range n {
		name := fmt.Sprintf("m%d", i)
		l.names = append(l.names, name)
		l.clients = append(l.clients, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i]))
		l.peers = append(l.peers, fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]))
		parts = append(parts, name+"="+l.peers[i])
	}
	l.initial = strings.Join(parts, ",")
	return l, nil
}

// start runs each attempt of a cluster start (up to 3, new ports each).
func start(t testing.TB, n int, mk func(l layout, dir string, i int) member) *Cluster {
	t.Helper()
	var lastErr error
	for attempt := range 3 {
		l, err := newLayout(n)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Join(t.TempDir(), fmt.Sprintf("etcd-%d", attempt))
		c := &Cluster{t: t, Endpoints: slices.Clone(l.clients)}
		for i := range n {
			c.members = append(c.members, mk(l, base, i))
		}
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, m := range c.members {
			wg.Go(func() { errs[i] = m.start() })
		}
		wg.Wait()
		if lastErr = errors.Join(errs...); lastErr == nil {
			t.Cleanup(func() {
				for _, m := range c.members {
					m.kill()
				}
			})
			return c
		}
		for _, m := range c.members {
			m.kill()
		}
	}
	t.Fatalf("starting a %d-member etcd cluster: %v", n, lastErr)
	return nil
}

// Embedded starts an n-member cluster inside the test process. Its
// members do not fsync (a test's data need not survive a power cut, and a
// shared test machine's disk would slow elections); a process cluster
// keeps etcd's defaults. Clients reach each member through a Proxy, so
// that Kill breaks their connections at once, as the death of a process
// would (an embedded member's own close waits seconds for them to end).
func Embedded(t testing.TB, n int) *Cluster {
	c := start(t, n, func(l layout, base string, i int) member {
		return &embedded{t: t, l: l, i: i, dir: filepath.Join(base, l.names[i])}
	})
	for i, m := range c.members {
		e := m.(*embedded)
		e.proxy = NewProxy(t, strings.TrimPrefix(c.Endpoints[i], "http://"))
		c.Endpoints[i] = e.proxy.Endpoint()
	}
	return c
}

type embedded struct {
	t     testing.TB
	l     layout
	i     int
	dir   string
	proxy *Proxy // nil until the cluster has started
	mu    sync.Mutex
	e     *embed.Etcd
}

func (m *embedded) start() error {
	cfg := embed.NewConfig()
	cfg.Name = m.l.names[m.i]
	cfg.Dir = m.dir
	cu, _ := url.Parse(m.l.clients[m.i])
	pu, _ := url.Parse(m.l.peers[m.i])
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = m.l.initial
	cfg.InitialClusterToken = "mapthenet-test"
	cfg.ClusterState = embed.ClusterStateFlagNew
	cfg.Logger, cfg.LogLevel = "zap", "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return err
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("member %s not ready within 30s", cfg.Name)
	}
	m.mu.Lock()
	m.e = e
	m.mu.Unlock()
	if m.proxy != nil {
		m.proxy.Restore()
	}
	return nil
}

func (m *embedded) kill() {
	m.mu.Lock()
	e := m.e
	m.e = nil
	m.mu.Unlock()
	if e == nil {
		return
	}
	if m.proxy != nil {
		m.proxy.Cut()
	}
	e.Server.HardStop() // no leadership transfer: as a crash would
	e.Close()
}

// Binary is the etcd binary tests run: $MAPTHENET_ETCD or etcd on PATH.
// Without one the test is skipped, saying why, unless
// MAPTHENET_REQUIRE_ETCD=1, which makes it fail.
func Binary(t testing.TB) string {
	t.Helper()
	bin := os.Getenv(BinaryEnv)
	if bin == "" {
		p, err := exec.LookPath("etcd")
		if err != nil {
			missing(t, "no etcd binary on PATH (Debian: apt-get install etcd-server; or set "+BinaryEnv+")")
			return ""
		}
		bin = p
	}
	if _, err := os.Stat(bin); err != nil {
		missing(t, fmt.Sprintf("etcd binary %s: %v", bin, err))
	}
	return bin
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf("%s, and %s=1 requires it", why, RequireEnv)
	}
	t.Skip("skipped: " + why)
}

// Processes starts an n-member cluster of etcd processes (Binary), each
// with its own data directory.
func Processes(t testing.TB, n int) *Cluster {
	bin := Binary(t)
	return start(t, n, func(l layout, base string, i int) member {
		return &process{t: t, bin: bin, l: l, i: i, dir: filepath.Join(base, l.names[i])}
	})
}

type process struct {
	t   testing.TB
	bin string
	l   layout
	i   int
	dir string
	mu  sync.Mutex
	cmd *exec.Cmd
	log *os.File
}

func (p *process) start() error {
	logPath := p.dir + ".log"
	if err := os.MkdirAll(filepath.Dir(logPath), 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(p.bin,
		"--name", p.l.names[p.i],
		"--data-dir", p.dir,
		"--listen-client-urls", p.l.clients[p.i],
		"--advertise-client-urls", p.l.clients[p.i],
		"--listen-peer-urls", p.l.peers[p.i],
		"--initial-advertise-peer-urls", p.l.peers[p.i],
		"--initial-cluster", p.l.initial,
		"--initial-cluster-token", "mapthenet-test",
		"--initial-cluster-state", "new",
		"--logger", "zap", "--log-level", "warn",
	)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the test
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	p.mu.Lock()
	p.cmd, p.log = cmd, logf
	p.mu.Unlock()
	// Ready when its own client port answers a status call (a lone
	// restarted member answers before the others are back).
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{p.l.clients[p.i]}, DialTimeout: time.Second, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	defer cli.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			tail, _ := os.ReadFile(logPath)
			return fmt.Errorf("etcd %s exited: %v: %s", p.l.names[p.i], err, lastLines(string(tail), 5))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err := cli.Status(ctx, p.l.clients[p.i])
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("etcd %s not serving within 30s: %v", p.l.names[p.i], err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (p *process) kill() {
	p.mu.Lock()
	cmd, logf := p.cmd, p.log
	p.cmd, p.log = nil, nil
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	for i := 0; i < 100; i++ { // reaped by start's goroutine
		if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	logf.Close()
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// PIDs are the process ids of the members that run as processes (none
// for embedded members), for benchmarks that measure etcd's own CPU.
func (c *Cluster) PIDs() []int {
	var pids []int
	for _, m := range c.members {
		if p, ok := m.(*process); ok {
			p.mu.Lock()
			if p.cmd != nil {
				pids = append(pids, p.cmd.Process.Pid)
			}
			p.mu.Unlock()
		}
	}
	return pids
}
