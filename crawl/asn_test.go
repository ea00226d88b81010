package crawl

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
)

const asnTSV = `1.0.0.0	1.0.0.255	13335	US	CLOUDFLARENET
1.0.1.0	1.0.3.255	0	None	Not routed
1.0.4.0	1.0.7.255	38803	AU	GTELECOM-AUSTRALIA Gtelecom-AUSTRALIA
2001:db8::	2001:db8::ffff	64500	ZZ	Documentation v6
`

func TestASNLookup(t *testing.T) {
	db, err := ReadASN(strings.NewReader(asnTSV))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ip   string
		asn  int64
		name string
		ok   bool
	}{
		{"1.0.0.1", 13335, "CLOUDFLARENET", true},
		{"1.0.0.255", 13335, "CLOUDFLARENET", true},
		{"1.0.2.1", 0, "", false}, // not routed
		{"1.0.5.9", 38803, "GTELECOM-AUSTRALIA Gtelecom-AUSTRALIA", true},
		{"1.0.8.0", 0, "", false},
		{"0.0.0.1", 0, "", false},
		{"2001:db8::1", 64500, "Documentation v6", true},
		{"::ffff:1.0.0.1", 13335, "CLOUDFLARENET", true},
	} {
		asn, name, ok := db.Lookup(net.ParseIP(tc.ip))
		if asn != tc.asn || name != tc.name || ok != tc.ok {
			t.Errorf("%s: %d %q %v, want %d %q %v", tc.ip, asn, name, ok, tc.asn, tc.name, tc.ok)
		}
	}
	if _, err := ReadASN(strings.NewReader("1.0.0.0\tnot-an-ip\t1\tUS\tX\n")); err == nil {
		t.Error("bad row accepted")
	}
}

// Nested and overlapping ranges: an address gets the most specific range
// that contains it (the smallest; of equal ones, the first in the file).
func TestASNLookupOverlapping(t *testing.T) {
	const tsv = `1.0.0.0	1.0.255.255	100	US	WIDE
1.0.0.5	1.0.0.10	200	US	NARROW
1.0.0.8	1.0.0.20	300	US	CROSSING
1.0.2.0	1.0.2.255	0	None	Not routed
1.0.3.0	1.0.3.255	400	US	FIRST
1.0.3.0	1.0.3.255	500	US	SAME SIZE, LATER
1.0.4.0	1.0.4.255	100	US	WIDE
255.255.255.0	255.255.255.255	600	ZZ	TOP OF V4
255.255.255.255	255.255.255.255	700	ZZ	LAST V4
::	ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff	800	ZZ	ALL V6
2001:db8::	2001:db8::ffff	900	ZZ	DOC
`
	db, err := ReadASN(strings.NewReader(tsv))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		ip   string
		asn  int64
		name string
		ok   bool
	}{
		{"1.0.0.0", 100, "WIDE", true},
		{"1.0.0.4", 100, "WIDE", true},
		{"1.0.0.5", 200, "NARROW", true},
		{"1.0.0.10", 200, "NARROW", true}, // NARROW (6) is smaller than CROSSING (13)
		{"1.0.0.11", 300, "CROSSING", true},
		{"1.0.0.20", 300, "CROSSING", true},
		{"1.0.0.21", 100, "WIDE", true},
		{"1.0.1.0", 100, "WIDE", true}, // after the nested ranges: the case
		{"1.0.2.7", 0, "", false},      // a not-routed range inside a routed one
		{"1.0.3.1", 400, "FIRST", true},
		{"1.0.4.1", 100, "WIDE", true},
		{"1.0.255.255", 100, "WIDE", true},
		{"1.1.0.0", 0, "", false},
		{"255.255.255.254", 600, "TOP OF V4", true},
		{"255.255.255.255", 700, "LAST V4", true},
		{"::1", 800, "ALL V6", true},
		{"2001:db8::1", 900, "DOC", true},
		{"2001:db8::1:0", 800, "ALL V6", true},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", 800, "ALL V6", true},
	} {
		asn, name, ok := db.Lookup(net.ParseIP(tc.ip))
		if asn != tc.asn || name != tc.name || ok != tc.ok {
			t.Errorf("%s: %d %q %v, want %d %q %v", tc.ip, asn, name, ok, tc.asn, tc.name, tc.ok)
		}
	}
}

// asnTestRow is a row of FuzzASNOverlapping's tables: 9.9.0.lo-9.9.0.hi.
type asnTestRow struct {
	lo, hi byte
	asn    int64
}

// bruteLookup is the reference Lookup: of every row containing the
// address, the smallest, the first of equal ones; its name is its index.
func bruteLookup(rows []asnTestRow, a netip.Addr) (int64, string, bool) {
	best := -1
	for i, r := range rows {
		b := a.As4()
		if !a.Is4() || b[0] != 9 || b[1] != 9 || b[2] != 0 || b[3] < r.lo || b[3] > r.hi {
			continue
		}
		if best < 0 || int(r.hi)-int(r.lo) < int(rows[best].hi)-int(rows[best].lo) {
			best = i
		}
	}
	if best < 0 || rows[best].asn == 0 {
		return 0, "", false
	}
	return rows[best].asn, fmt.Sprint("row ", best), true
}

// FuzzASNOverlapping checks Lookup against bruteLookup on random tables
// of ranges in a small stretch of addresses (so that they overlap a lot),
// at every address of the stretch and either side of it.
func FuzzASNOverlapping(f *testing.F) {
	f.Add([]byte{0, 255, 1, 5, 10, 2})
	f.Add([]byte{0, 255, 1, 5, 10, 2, 8, 20, 3, 100, 120, 0})
	f.Add([]byte{10, 20, 1, 10, 20, 2, 15, 15, 3, 0, 9, 4, 21, 255, 5})
	f.Fuzz(func(t *testing.T, b []byte) {
		var rows []asnTestRow
		var tsv strings.Builder
		for i := 0; i+2 < len(b) && len(rows) < 40; i += 3 {
			r := asnTestRow{min(b[i], b[i+1]), max(b[i], b[i+1]), int64(b[i+2] % 4)} // asn 0: not routed
			// The name says the row, so that the wrong row of the right AS shows.
			fmt.Fprintf(&tsv, "9.9.0.%d\t9.9.0.%d\t%d\tZZ\trow %d\n", r.lo, r.hi, r.asn, len(rows))
			rows = append(rows, r)
		}
		db, err := ReadASN(strings.NewReader(tsv.String()))
		if err != nil {
			t.Fatal(err)
		}
		addrs := []netip.Addr{netip.MustParseAddr("9.8.255.255"), netip.MustParseAddr("9.9.1.0"), netip.MustParseAddr("::ffff:9.9.0.7")}
		for x := range 256 {
			addrs = append(addrs, netip.AddrFrom4([4]byte{9, 9, 0, byte(x)}))
		}
		for _, a := range addrs {
			wantASN, wantName, wantOK := bruteLookup(rows, a.Unmap())
			if asn, name, ok := db.Lookup(a.AsSlice()); asn != wantASN || name != wantName || ok != wantOK {
				t.Fatalf("%v in\n%s: %d %q %v, want %d %q %v", a, tsv.String(), asn, name, ok, wantASN, wantName, wantOK)
			}
		}
	})
}

func FuzzReadASN(f *testing.F) {
	f.Add(asnTSV)
	f.Add("1.0.0.0\t0.0.0.1\t5\tUS\tbackwards\n")
	f.Add("::\t1.2.3.4\t5\n")
	f.Fuzz(func(t *testing.T, s string) {
		db, err := ReadASN(strings.NewReader(s))
		if err != nil {
			return
		}
		for _, ip := range []string{"1.0.0.1", "2001:db8::1", "0.0.0.0"} {
			db.Lookup(net.ParseIP(ip))
		}
	})
}
