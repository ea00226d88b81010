package crawl

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sort"
	"strconv"
	"strings"
)

// ASNDB maps IP addresses to their network (autonomous system number and
// name), from an ip2asn TSV such as iptoasn.com's ip2asn-v4.tsv:
// range_start range_end AS_number country_code AS_description.
type ASNDB struct {
	ranges []asnRange // sorted by start, not overlapping
}

type asnRange struct {
	start, end netip.Addr
	asn        int64
	name       string
}

// LoadASN reads an ip2asn TSV file (gzip-compressed if it ends in .gz).
func LoadASN(path string) (*ASNDB, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--asn-db: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("--asn-db %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	db, err := ReadASN(r)
	if err != nil {
		return nil, fmt.Errorf("--asn-db %s: %w", path, err)
	}
	return db, nil
}

// ReadASN parses ip2asn TSV. Rows with AS number 0 ("Not routed") are
// skipped.
func ReadASN(r io.Reader) (*ASNDB, error) {
	db := &ASNDB{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	names := map[string]string{} // one copy of each operator name
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := strings.SplitN(text, "\t", 5)
		if len(f) < 3 {
			return nil, fmt.Errorf("line %d: want range_start, range_end, AS number, country, description separated by tabs", line)
		}
		start, err1 := netip.ParseAddr(f[0])
		end, err2 := netip.ParseAddr(f[1])
		asn, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || start.Is4() != end.Is4() || end.Less(start) {
			return nil, fmt.Errorf("line %d: not an address range and AS number", line)
		}
		if asn == 0 {
			continue
		}
		name := ""
		if len(f) == 5 {
			name = strings.TrimSpace(f[4])
		}
		if n, ok := names[name]; ok {
			name = n
		} else {
			names[name] = name
		}
		db.ranges = append(db.ranges, asnRange{start: start, end: end, asn: asn, name: name})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	sort.Slice(db.ranges, func(i, j int) bool { return db.ranges[i].start.Less(db.ranges[j].start) })
	return db, nil
}

// Lookup returns the AS number and name of ip's network.
func (db *ASNDB) Lookup(ip net.IP) (int64, string, bool) {
	if db == nil {
		return 0, "", false
	}
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return 0, "", false
	}
	a = a.Unmap()
	// The last range starting at or before a.
	i := sort.Search(len(db.ranges), func(i int) bool { return a.Less(db.ranges[i].start) }) - 1
	if i < 0 {
		return 0, "", false
	}
	r := db.ranges[i]
	if r.start.Is4() != a.Is4() || r.end.Less(a) {
		return 0, "", false
	}
	return r.asn, r.name, true
}

// Len is the number of routed ranges.
func (db *ASNDB) Len() int { return len(db.ranges) }
