package fetch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// refusedAddrs holds addresses of every range the guard refuses, with each
// IPv6 form that carries an IPv4 address. publicAddrs are the positive
// controls, many at a range's edge.
var refusedAddrs = []string{
	// IPv4.
	"0.0.0.0", "0.1.2.3", "0.255.255.255",
	"10.0.0.1", "10.255.255.255",
	"100.64.0.0", "100.64.0.1", "100.127.255.255",
	"127.0.0.1", "127.1.2.3", "127.255.255.254",
	"169.254.0.1", "169.254.169.254", "169.254.255.255",
	"172.16.0.1", "172.31.255.255",
	"192.0.0.0", "192.0.0.1", "192.0.0.8", "192.0.0.9", "192.0.0.10", "192.0.0.170", "192.0.0.255",
	"192.0.2.1", "192.31.196.1", "192.52.193.1", "192.88.99.1",
	"192.168.0.1", "192.168.255.255", "192.175.48.1",
	"198.18.0.1", "198.19.255.255", "198.51.100.7", "203.0.113.9",
	"224.0.0.1", "233.252.0.1", "239.255.255.255",
	"240.0.0.1", "250.1.2.3", "255.255.255.254", "255.255.255.255",
	// IPv6.
	"::", "::1", "::127.0.0.1", "::8.8.8.8", "::a00:1",
	"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254", "::ffff:0.0.0.0", "::ffff:100.64.0.1",
	"::ffff:0:127.0.0.1", "::ffff:0:8.8.8.8",
	"64:ff9b::127.0.0.1", "64:ff9b::a9fe:a9fe", "64:ff9b::10.1.1.1", "64:ff9b::192.168.1.1", "64:ff9b::ffff:ffff",
	"64:ff9b:1::808:808", "64:ff9b:1:ffff::1",
	"100::1", "100::ffff:ffff:ffff:ffff", "100:0:0:1::1",
	"2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "2001:1::1", "2001:2::1", "2001:3::1", "2001:4:112::1",
	"2001:10::1", "2001:20::1", "2001:30::1", "2001:1ff:ffff::1",
	"2001:db8::1", "2001:db8:ffff::1",
	"2002:7f00:1::1", "2002:a00:1::1", "2002:a9fe:a9fe::1", "2002:c0a8:101::1", "2002::1", "2002:e000:1::",
	"3fff::1", "3fff:fff::1",
	"5f00::1", "1000::1", "4000::1", "8000::1",
	"fc00::1", "fd12:3456::1", "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	"fe80::1", "febf::1", "fec0::1",
	"ff00::1", "ff02::1", "ff05::2", "ff0e::1",
}

var publicAddrs = []string{
	"1.1.1.1", "8.8.8.8", "93.184.215.14", "11.0.0.1", "1.0.0.0",
	"9.255.255.255", "100.63.255.255", "100.128.0.0", "126.255.255.255", "128.0.0.1",
	"169.253.255.255", "169.255.0.0", "172.15.255.255", "172.32.0.0",
	"192.0.1.0", "192.0.3.0", "192.88.98.255", "192.167.255.255", "192.169.0.0",
	"198.17.255.255", "198.20.0.0", "198.51.99.255", "203.0.112.255", "223.255.255.255",
	"::ffff:8.8.8.8", "64:ff9b::808:808", "64:ff9b::1.1.1.1", "2002:808:808::1", "2002:5db8:d70e:1::1",
	"2606:4700:4700::1111", "2001:4860:4860::8888", "2001:200::1", "2620:4f:8000::1", "2a00:1450:4001::1",
	"3ffe::1", "3fff:1000::1",
}

func TestPublicTable(t *testing.T) {
	for _, s := range refusedAddrs {
		if a := netip.MustParseAddr(s); Public(a) || publicIP(net.ParseIP(s)) {
			t.Errorf("Public(%s) = true, want false", s)
		}
	}
	for _, s := range publicAddrs {
		if a := netip.MustParseAddr(s); !Public(a) || !publicIP(net.ParseIP(s)) {
			t.Errorf("Public(%s) = false, want true", s)
		}
	}
	for _, s := range []string{"fe80::1%eth0", "2606:4700:4700::1111%eth0"} {
		if Public(netip.MustParseAddr(s)) {
			t.Errorf("Public(%s): a zoned address is link-scoped", s)
		}
	}
	if Public(netip.Addr{}) || publicIP(nil) || publicIP(net.IP{1, 2, 3}) {
		t.Error("an invalid address is public")
	}
}

// The guard's table, checked against netip's own classes and against
// itself: an IPv4 address and its mapped, NAT64 and 6to4 forms are judged
// alike, and the net.IP path agrees with the netip one.
func FuzzPublic(f *testing.F) {
	for _, s := range append(append([]string{}, refusedAddrs...), publicAddrs...) {
		f.Add(netip.MustParseAddr(s).AsSlice(), uint64(0))
	}
	f.Fuzz(func(t *testing.T, b []byte, rest uint64) {
		a, ok := netip.AddrFromSlice(b)
		if !ok {
			return
		}
		pub := Public(a)
		if pub && (!a.IsGlobalUnicast() || a.IsPrivate() || a.IsLoopback() || a.IsMulticast() ||
			a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() || a.IsUnspecified()) {
			t.Fatalf("Public(%s) but netip says it is not global unicast", a)
		}
		if publicIP(net.IP(b)) != pub {
			t.Fatalf("publicIP(%v) != Public(%s)", b, a)
		}
		if !a.Unmap().Is4() {
			return
		}
		v4 := a.Unmap().As4()
		pub4 := Public(netip.AddrFrom4(v4))
		var nat64, sixToFour [16]byte
		copy(nat64[:], []byte{0, 0x64, 0xff, 0x9b})
		copy(nat64[12:], v4[:])
		sixToFour[0], sixToFour[1] = 0x20, 0x02
		copy(sixToFour[2:], v4[:])
		for i := range 8 {
			sixToFour[8+i] = byte(rest >> (8 * i))
		}
		for _, form := range []netip.Addr{
			netip.AddrFrom16(netip.AddrFrom4(v4).As16()), // mapped
			netip.AddrFrom16(nat64), netip.AddrFrom16(sixToFour),
		} {
			if Public(form) != pub4 {
				t.Fatalf("Public(%s) = %v, its IPv4 %s %v", form, Public(form), netip.AddrFrom4(v4), pub4)
			}
		}
	})
}

func TestPortAllowed(t *testing.T) {
	for _, p := range []string{"80", "443", "8080", "8443", "1024", "65535", "3000"} {
		if !PortAllowed(p) {
			t.Errorf("PortAllowed(%s) = false", p)
		}
	}
	for _, p := range []string{"0", "1", "22", "25", "6000", "6667", "10080", "65536", "-1", "x", ""} {
		if PortAllowed(p) {
			t.Errorf("PortAllowed(%q) = true", p)
		}
	}
	if len(badPorts) != 83 { // the fetch standard's 82, and 0
		t.Errorf("%d bad ports, want the fetch standard's 82 and 0", len(badPorts))
	}
}

// canary is a loopback HTTP server that counts connections, and a dial
// function that sends whatever the guard let through to it, noting the
// address the dialer meant to reach. Accepts are counted on the listener.
type canary struct {
	srv     *httptest.Server
	accepts atomic.Int32
	mu      sync.Mutex
	dialled []string
}

type countingListener struct {
	net.Listener
	n *atomic.Int32
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func newCanary(t *testing.T) *canary {
	c := &canary{}
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "canary")
	}))
	c.srv.Listener = countingListener{Listener: c.srv.Listener, n: &c.accepts}
	c.srv.Start()
	t.Cleanup(c.srv.Close)
	return c
}

func (c *canary) port() string {
	_, p, _ := net.SplitHostPort(c.srv.Listener.Addr().String())
	return p
}

func (c *canary) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c.mu.Lock()
	c.dialled = append(c.dialled, addr)
	c.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", c.srv.Listener.Addr().String())
}

func (c *canary) dials() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.dialled...)
}

// assertNone checks that nothing was dialled and the canary was never reached.
func (c *canary) assertNone(t *testing.T, what string) {
	t.Helper()
	// No wait needed: a connection the dialer made would have carried the
	// request, and the canary accepts before it answers.
	if d := c.dials(); len(d) > 0 || c.accepts.Load() > 0 {
		t.Errorf("%s: dialled %v, canary accepted %d; want no connection", what, d, c.accepts.Load())
	}
}

// countingResolver is a mapResolver that counts its look-ups.
type countingResolver struct {
	m mapResolver
	n atomic.Int32
}

func (r *countingResolver) LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error) {
	r.n.Add(1)
	return r.m.LookupIPAddr(ctx, host)
}

func guarded(t *testing.T, res Resolver, rules []ConnectTo, cn *canary) *Client {
	d := NewDialer(res, rules, time.Second, 0)
	if cn != nil {
		d.dial = cn.dial
	}
	c := newConfig(d).NewClient()
	t.Cleanup(c.Close)
	return c
}

func wantRefused(t *testing.T, c *Client, url, reason string) {
	t.Helper()
	_, err := c.Get(context.Background(), url, nil, nil)
	var fe *Error
	var ge *GuardError
	if !errors.As(err, &fe) || fe.Kind != KindConnect || fe.Short() != reason || !errors.As(err, &ge) {
		t.Errorf("%s: err %v, want a connect error %q", url, err, reason)
	}
}

func urlHost(addr string) string {
	if a := netip.MustParseAddr(addr); a.Is6() {
		return "[" + addr + "]"
	}
	return addr
}

// Every refused range, reached by name (through the resolver) and as an
// address in the URL: no dial, no connection.
func TestGuardRefusesEveryRange(t *testing.T) {
	for _, addr := range refusedAddrs {
		cn := newCanary(t)
		c := guarded(t, mapResolver{"x.test": {addr}}, nil, cn)
		wantRefused(t, c, "http://x.test/", "no public address")
		wantRefused(t, c, "https://x.test:8443/", "no public address")
		wantRefused(t, c, "http://"+urlHost(addr)+"/", "no public address")
		cn.assertNone(t, addr)
	}
	cn := newCanary(t)
	c := guarded(t, mapResolver{}, nil, cn)
	wantRefused(t, c, "http://[fe80::1%25eth0]/", "no public address")
	cn.assertNone(t, "a zoned address")
}

// The positive control: a public address is dialled (here into the canary
// on loopback, the test's stand-in for the internet), and among mixed
// answers only the public ones are tried.
func TestGuardLetsPublicThrough(t *testing.T) {
	cn := newCanary(t)
	c := guarded(t, mapResolver{
		"pub.test": {"93.184.215.14"},
		"mix.test": {"127.0.0.1", "10.0.0.1", "::ffff:169.254.169.254", "2606:4700:4700::1111"},
	}, nil, cn)
	r, err := c.Get(context.Background(), "http://pub.test/", nil, nil)
	if err != nil || string(r.Body) != "canary" {
		t.Fatalf("public address: %v", err)
	}
	c2 := guarded(t, mapResolver{"mix.test": {"127.0.0.1", "10.0.0.1", "::ffff:169.254.169.254", "2606:4700:4700::1111"}}, nil, cn)
	if _, err := c2.Get(context.Background(), "http://mix.test:8080/", nil, nil); err != nil {
		t.Fatalf("mixed answers: %v", err)
	}
	if got, want := cn.dials(), []string{"93.184.215.14:80", "[2606:4700:4700::1111]:8080"}; !slices.Equal(got, want) {
		t.Errorf("dialled %v, want %v", got, want)
	}
	if cn.accepts.Load() != 2 {
		t.Errorf("canary accepted %d, want 2", cn.accepts.Load())
	}
}

// With the real dial function: a name resolving to 127.0.0.1, the port of
// a listening canary, is refused; so are loopback literals in every form.
func TestGuardRealDialToLoopback(t *testing.T) {
	cn := newCanary(t)
	p := cn.port()
	c := guarded(t, mapResolver{"lo.test": {"127.0.0.1"}, "lo6.test": {"::ffff:127.0.0.1"}}, nil, nil)
	for _, u := range []string{
		"http://lo.test:" + p + "/", "http://lo6.test:" + p + "/robots.txt",
		"http://127.0.0.1:" + p + "/", "http://[::ffff:127.0.0.1]:" + p + "/", "http://[::ffff:7f00:1]:" + p + "/",
		"http://[64:ff9b::7f00:1]:" + p + "/", "http://[2002:7f00:1::]:" + p + "/", "http://[::1]:" + p + "/",
	} {
		wantRefused(t, c, u, "no public address")
	}
	cn.assertNone(t, "loopback canary")
}

// DNS rebinding: the name was public at the first connection and is
// loopback at the next; the check is on each dial, so the next is refused.
func TestGuardRebinding(t *testing.T) {
	cn := newCanary(t)
	var calls atomic.Int32
	res := resolverFunc(func(host string) []string {
		if calls.Add(1) == 1 {
			return []string{"93.184.215.14"}
		}
		return []string{"127.0.0.1"}
	})
	d := NewDialer(res, nil, time.Second, 0)
	d.dial = cn.dial
	cfg := newConfig(d)
	c1 := cfg.NewClient()
	defer c1.Close()
	if _, err := c1.Get(context.Background(), "http://rebind.test/", nil, nil); err != nil {
		t.Fatal(err)
	}
	c2 := cfg.NewClient()
	defer c2.Close()
	wantRefused(t, c2, "http://rebind.test/", "no public address")
	if got := cn.dials(); !slices.Equal(got, []string{"93.184.215.14:80"}) {
		t.Errorf("dialled %v", got)
	}
}

type resolverFunc func(host string) []string

func (f resolverFunc) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	var out []net.IPAddr
	for _, s := range f(host) {
		out = append(out, net.IPAddr{IP: net.ParseIP(s)})
	}
	return out, nil
}

// Every bad port is refused before any look-up or dial, for a public name
// and a public address alike.
func TestGuardRefusesBadPorts(t *testing.T) {
	cn := newCanary(t)
	res := &countingResolver{m: mapResolver{"pub.test": {"93.184.215.14"}}}
	c := guarded(t, res, nil, cn)
	ports := make([]int, 0, len(badPorts))
	for p := range badPorts {
		if p != 0 { // a URL cannot say port 0 to the transport
			ports = append(ports, p)
		}
	}
	slices.Sort(ports)
	for _, p := range ports {
		wantRefused(t, c, "http://pub.test:"+strconv.Itoa(p)+"/", "port not allowed")
		wantRefused(t, c, "https://93.184.215.14:"+strconv.Itoa(p)+"/", "port not allowed")
	}
	if res.n.Load() != 0 {
		t.Errorf("%d look-ups for refused ports", res.n.Load())
	}
	cn.assertNone(t, "bad ports")
}

// --connect-to is the operator's explicit choice: a host it matches goes
// where the rule says, loopback and bad ports included; a host it does not
// match is guarded as usual.
func TestGuardExemptsConnectTo(t *testing.T) {
	cn := newCanary(t)
	p := cn.port()
	res := mapResolver{"named.test": {"127.0.0.1"}, "other.test": {"127.0.0.1"}, "smtp.test": {"127.0.0.1"}}
	c := guarded(t, res, []ConnectTo{
		{Host: "lo.test", ToHost: "127.0.0.1", ToPort: p},
		{Host: "named.test"},
		{Host: "smtp.test", Port: "25", ToHost: "127.0.0.1", ToPort: p},
	}, nil)
	for _, u := range []string{"http://lo.test/", "http://lo.test:8443/x", "http://named.test:" + p + "/", "http://smtp.test:25/"} {
		r, err := c.Get(context.Background(), u, nil, nil)
		if err != nil || string(r.Body) != "canary" {
			t.Errorf("%s: %v", u, err)
		}
	}
	before := cn.accepts.Load()
	wantRefused(t, c, "http://other.test:"+p+"/", "no public address")
	wantRefused(t, c, "http://smtp.test:26/", "no public address") // the rule is for port 25 only
	wantRefused(t, c, "http://127.0.0.1:"+p+"/", "no public address")
	if cn.accepts.Load() != before {
		t.Errorf("unmatched hosts reached the canary")
	}
	// An empty HOST matches every host: the operator sends them all there.
	any := guarded(t, mapResolver{}, []ConnectTo{{ToHost: "127.0.0.1", ToPort: p}}, nil)
	if _, err := any.Get(context.Background(), "http://169.254.169.254/latest/meta-data/", nil, nil); err != nil {
		t.Errorf("empty-host rule: %v", err)
	}
}

// The transport never uses a proxy: one would dial for us, past the guard.
func TestNoProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:9")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:9")
	c := guarded(t, mapResolver{}, nil, nil)
	if c.tr.Proxy != nil {
		t.Fatal("the transport has a proxy function")
	}
}
