package fetch

import (
	"net"
	"net/netip"
	"strconv"
)

// The address guard: the crawler connects only to public unicast addresses
// and never to a port browsers refuse. The Dialer applies it to the address
// it is about to dial, after resolution, so a name that resolves (or
// rebinds) to an internal address is refused like the address itself.
// Hosts matched by a --connect-to rule are the operator's explicit choice
// and are not checked; nothing else turns the guard off.

// GuardError is a connection the guard would not open. Its text is a short
// reason with no address in it, fit for visits.error.
type GuardError struct{ Reason string }

func (e *GuardError) Error() string { return e.Reason }

var (
	errNotPublic = &GuardError{Reason: "no public address"}
	errBadPort   = &GuardError{Reason: "port not allowed"}
)

// notGlobal is written from the IANA IPv4 and IPv6 Special-Purpose Address
// Registries (iana-ipv4-special-registry, iana-ipv6-special-registry), the
// multicast ranges and RFC 4291's deprecated forms. v4At >= 0 marks a range
// that embeds an IPv4 address at that byte offset: such an address is
// judged by the IPv4 address inside it (a NAT64 or 6to4 form of an internal
// address is internal). Every other row is refused whole. The first
// matching row decides; rows do not overlap where it would matter.
//
// Rows marked globally reachable in the registries but refused here anyway
// are said so: they are protocol anycast, relay or identifier blocks on
// which no web site lives.
var notGlobal = []struct {
	p    netip.Prefix
	v4At int
}{
	// IPv4.
	{pfx("0.0.0.0/8"), -1},          // "this network", RFC 791 §3.2; 0.0.0.0/32 RFC 1122 §3.2.1.3
	{pfx("10.0.0.0/8"), -1},         // private use, RFC 1918
	{pfx("100.64.0.0/10"), -1},      // shared address space (CGNAT), RFC 6598
	{pfx("127.0.0.0/8"), -1},        // loopback, RFC 1122 §3.2.1.3
	{pfx("169.254.0.0/16"), -1},     // link local (cloud metadata services), RFC 3927
	{pfx("172.16.0.0/12"), -1},      // private use, RFC 1918
	{pfx("192.0.0.0/24"), -1},       // IETF protocol assignments, RFC 6890 §2.1; inside it 192.0.0.0/29 RFC 7335, 192.0.0.8/32 RFC 7600, 192.0.0.170-171 RFC 8880 (not global), and the PCP and TURN anycast addresses 192.0.0.9-10 RFC 7723, RFC 8155 (global, no web: refused too)
	{pfx("192.0.2.0/24"), -1},       // documentation TEST-NET-1, RFC 5737
	{pfx("192.31.196.0/24"), -1},    // AS112-v4, RFC 7535 (global, DNS sink only: refused)
	{pfx("192.52.193.0/24"), -1},    // AMT relays, RFC 7450 (global, multicast relay only: refused)
	{pfx("192.88.99.0/24"), -1},     // deprecated 6to4 relay anycast, RFC 7526
	{pfx("192.168.0.0/16"), -1},     // private use, RFC 1918
	{pfx("192.175.48.0/24"), -1},    // AS112 direct delegation, RFC 7534 (global, DNS sink only: refused)
	{pfx("198.18.0.0/15"), -1},      // benchmarking, RFC 2544
	{pfx("198.51.100.0/24"), -1},    // documentation TEST-NET-2, RFC 5737
	{pfx("203.0.113.0/24"), -1},     // documentation TEST-NET-3, RFC 5737
	{pfx("224.0.0.0/4"), -1},        // multicast, RFC 5771
	{pfx("240.0.0.0/4"), -1},        // reserved, RFC 1112 §4
	{pfx("255.255.255.255/32"), -1}, // limited broadcast, RFC 8190, RFC 919 §7 (inside 240/4; listed for the record)

	// IPv6 forms that carry an IPv4 address.
	{pfx("::ffff:0:0/96"), 12}, // IPv4-mapped, RFC 4291 §2.5.5.2: dialled as the IPv4 address it holds (Public unmaps it first)
	{pfx("64:ff9b::/96"), 12},  // NAT64 well-known prefix, RFC 6052 §2.1: reaches the IPv4 address it holds
	{pfx("2002::/16"), 2},      // 6to4, RFC 3056 §2: the relay reaches the IPv4 address it holds

	// IPv6.
	{pfx("::/128"), -1},          // unspecified, RFC 4291 §2.5.2
	{pfx("::1/128"), -1},         // loopback, RFC 4291 §2.5.3
	{pfx("::/96"), -1},           // IPv4-compatible, deprecated, RFC 4291 §2.5.5.1
	{pfx("::ffff:0:0:0/96"), -1}, // IPv4-translated (SIIT), RFC 2765 §2.1
	{pfx("64:ff9b:1::/48"), -1},  // local-use IPv4/IPv6 translation, RFC 8215: a network's own NAT64, whose embedding is its own choice: refused whole
	{pfx("100::/64"), -1},        // discard-only, RFC 6666
	{pfx("100:0:0:1::/64"), -1},  // dummy prefix, RFC 9780
	{pfx("2001::/23"), -1},       // IETF protocol assignments, RFC 2928: Teredo 2001::/32 RFC 4380, benchmarking 2001:2::/48 RFC 5180, ORCHID 2001:10::/28 RFC 4843 (not global); the PCP, TURN and DNS-SD SRP anycast addresses 2001:1::1-3 RFC 7723, RFC 8155, RFC 9665, AMT 2001:3::/32 RFC 7450, AS112-v6 2001:4:112::/48 RFC 7535, ORCHIDv2 2001:20::/28 RFC 7343 and drone DETs 2001:30::/28 RFC 9374 (global, no web: refused too)
	{pfx("2001:db8::/32"), -1},   // documentation, RFC 3849
	{pfx("3fff::/20"), -1},       // documentation, RFC 9637
	{pfx("5f00::/16"), -1},       // SRv6 SIDs, RFC 9602
	{pfx("fc00::/7"), -1},        // unique local, RFC 4193, RFC 8190
	{pfx("fe80::/10"), -1},       // link-local unicast, RFC 4291 §2.5.6
	{pfx("fec0::/10"), -1},       // site-local, deprecated, RFC 3879
	{pfx("ff00::/8"), -1},        // multicast, RFC 4291 §2.7
	// 2620:4f:8000::/48 (AS112 direct delegation, RFC 7534) is global and
	// inside 2000::/3: allowed, like any other global unicast address.
}

// globalUnicast6 is the IPv6 space IANA allocates for global unicast
// (RFC 4291 §2.4, RFC 3587); an IPv6 address outside it is never public.
var globalUnicast6 = pfx("2000::/3")

func pfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// Public reports whether the crawler may connect to a: a public unicast
// address, not in any non-global range above nor an IPv4-mapped, NAT64 or
// 6to4 form of one. An address with a zone is link-scoped: not public.
func Public(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	// Many resolvers give IPv4 answers in their 16-byte form: judge the
	// IPv4 address it is.
	a = a.Unmap()
	for _, r := range notGlobal {
		if !r.p.Contains(a) {
			continue
		}
		if r.v4At < 0 {
			return false
		}
		b := a.As16()
		return Public(netip.AddrFrom4([4]byte(b[r.v4At : r.v4At+4])))
	}
	return a.Is4() || globalUnicast6.Contains(a)
}

// publicIP is Public for a net.IP, as resolvers give them.
func publicIP(ip net.IP) bool {
	a, ok := netip.AddrFromSlice(ip)
	return ok && Public(a)
}

// badPorts is the fetch standard's "bad port" list (WHATWG Fetch, §2.9
// "Port blocking"): ports of other protocols that a web request must never
// reach, which browsers refuse. Port 0 is no port at all.
var badPorts = map[int]bool{
	0: true, 1: true, 7: true, 9: true, 11: true, 13: true, 15: true, 17: true, 19: true, 20: true,
	21: true, 22: true, 23: true, 25: true, 37: true, 42: true, 43: true, 53: true, 69: true, 77: true,
	79: true, 87: true, 95: true, 101: true, 102: true, 103: true, 104: true, 109: true, 110: true,
	111: true, 113: true, 115: true, 117: true, 119: true, 123: true, 135: true, 137: true, 139: true,
	143: true, 161: true, 179: true, 389: true, 427: true, 465: true, 512: true, 513: true, 514: true,
	515: true, 526: true, 530: true, 531: true, 532: true, 540: true, 548: true, 554: true, 556: true,
	563: true, 587: true, 601: true, 636: true, 989: true, 990: true, 993: true, 995: true,
	1719: true, 1720: true, 1723: true, 2049: true, 3659: true, 4045: true, 4190: true, 5060: true,
	5061: true, 6000: true, 6566: true, 6665: true, 6666: true, 6667: true, 6668: true, 6669: true,
	6679: true, 6697: true, 10080: true,
}

// PortAllowed reports whether a request may go to port (a decimal string,
// as in a URL): not on the bad-port list, and a port at all.
func PortAllowed(port string) bool {
	n, err := strconv.Atoi(port)
	return err == nil && n > 0 && n < 65536 && !badPorts[n]
}
