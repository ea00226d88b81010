package crawl

import (
	"net"
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
