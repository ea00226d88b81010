package fleet

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// BenchmarkMaySend: the check the crawl makes before every request (local
// state only).
func BenchmarkMaySend(b *testing.B) {
	_, cli := newFleetB(b, 4)
	h := newHandler("a", nil)
	n := startNodeB(b, cli, h)
	for len(n.Owned()) < 4 || h.current() < 4 {
		time.Sleep(10 * time.Millisecond)
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		s := 0
		for pb.Next() {
			n.MaySend(s & 3)
			s++
		}
	})
}

// BenchmarkReserveIP: one shared IP pace reservation (a read and a
// compare-and-swap in etcd), against one embedded member on loopback.
func BenchmarkReserveIP(b *testing.B) {
	_, cli := newFleetB(b, 1)
	n := startNodeB(b, cli, newHandler("a", nil))
	ctx := context.Background()
	ip := netip.MustParseAddr("192.0.2.1")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := n.ReserveIP(ctx, ip, time.Microsecond); err != nil {
			b.Fatal(err)
		}
	}
}
