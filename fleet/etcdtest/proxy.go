package etcdtest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards TCP connections on a loopback port to an etcd member, and
// can cut them: a client that reaches etcd only through it is then
// partitioned from the cluster (its connections break, new ones are
// refused at once) until Restore.
type Proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

// NewProxy forwards to target (HOST:PORT) until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	return NewProxyOn(t, "127.0.0.1:0", target)
}

// NewProxyOn is NewProxy listening on listen (HOST:PORT; port 0: any):
// say, the root network namespace's end of a veth pair, for a process in
// another namespace.
func NewProxyOn(t testing.TB, listen, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]bool{}}
	p.wg.Add(1)
	go p.serve()
	t.Cleanup(p.close)
	return p
}

// Endpoint is the proxy's client URL.
func (p *Proxy) Endpoint() string { return "http://" + p.ln.Addr().String() }

// Addr is the proxy's HOST:PORT.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut breaks every connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.ln.Close()
	p.Cut()
	p.wg.Wait()
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.cut {
			p.mu.Unlock()
			c.Close()
			continue
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			p.mu.Unlock()
			c.Close()
			continue
		}
		p.conns[c], p.conns[u] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, u)
		go p.pipe(u, c)
	}
}

func (p *Proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	io.Copy(dst, src)
	dst.Close()
	src.Close()
	p.mu.Lock()
	delete(p.conns, dst)
	delete(p.conns, src)
	p.mu.Unlock()
}
