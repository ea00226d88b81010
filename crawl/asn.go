package crawl

import (
	"bufio"
	"cmp"
	"compress/gzip"
	"container/heap"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// ASNDB maps IP addresses to their network (autonomous system number and
// name), from an ip2asn TSV such as iptoasn.com's ip2asn-v4.tsv:
// range_start range_end AS_number country_code AS_description.
//
// Ranges may nest or overlap: ip2asn tables are built from BGP
// announcements, where a more specific prefix is often announced inside a
// bigger one (a /24 of a customer inside its provider's /16), so such files
// do contain nested ranges and refusing them would make real tables
// unusable. An address gets the most specific range that contains it (the
// smallest; of equal ones, the first in the file), as routing would.
type ASNDB struct {
	ranges []asnRange // disjoint, sorted by start (see disjoint)
	routed int        // routed rows read
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

// ReadASN parses ip2asn TSV. Rows with AS number 0 ("Not routed") answer
// no network: they matter only where they are the most specific range.
func ReadASN(r io.Reader) (*ASNDB, error) {
	db := &ASNDB{}
	var rows []asnRange
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
		if asn != 0 {
			db.routed++
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
		rows = append(rows, asnRange{start: start, end: end, asn: asn, name: name})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	db.ranges = disjoint(rows)
	return db, nil
}

// disjoint splits rows (in file order) into disjoint ranges, sorted by
// start, each answering with the most specific row that covers it; ranges
// of "Not routed" rows are left out, and neighbours with the same network
// are merged. A sweep over the rows' boundaries with a heap of the rows
// open there: O(n log n), so that Lookup stays one binary search.
func disjoint(rows []asnRange) []asnRange {
	var v4, v6 []asnRow
	for i, r := range rows {
		row := asnRow{asnRange: r, size: span(r.start, r.end), line: i}
		if r.start.Is4() {
			v4 = append(v4, row)
		} else {
			v6 = append(v6, row)
		}
	}
	// Every IPv4 address sorts before every IPv6 one, as in Lookup.
	return sweep(v6, sweep(v4, nil))
}

// asnRow is a row of the file with its size and position, the keys of
// "most specific".
type asnRow struct {
	asnRange
	size [2]uint64 // end - start, as a 128-bit number (high, low)
	line int
}

func span(start, end netip.Addr) [2]uint64 {
	a, b := start.As16(), end.As16()
	ah, al := binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	bh, bl := binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
	lo := bl - al
	hi := bh - ah
	if bl < al {
		hi--
	}
	return [2]uint64{hi, lo}
}

// moreSpecific orders rows most specific first.
func moreSpecific(a, b *asnRow) int {
	return cmp.Or(cmp.Compare(a.size[0], b.size[0]), cmp.Compare(a.size[1], b.size[1]), cmp.Compare(a.line, b.line))
}

// openRows is a heap of the rows open at a point of the sweep, the most
// specific on top.
type openRows []*asnRow

func (h openRows) Len() int           { return len(h) }
func (h openRows) Less(i, j int) bool { return moreSpecific(h[i], h[j]) < 0 }
func (h openRows) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *openRows) Push(x any)        { *h = append(*h, x.(*asnRow)) }
func (h *openRows) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// sweep appends to out the disjoint ranges of rows, all of one address
// family.
func sweep(rows []asnRow, out []asnRange) []asnRange {
	if len(rows) == 0 {
		return out
	}
	slices.SortFunc(rows, func(a, b asnRow) int { return a.start.Compare(b.start) })
	// The points where the answer may change: every start, and the address
	// after every end (none after the family's last address).
	points := make([]netip.Addr, 0, 2*len(rows))
	for _, r := range rows {
		points = append(points, r.start)
		if next := r.end.Next(); next.IsValid() {
			points = append(points, next)
		}
	}
	slices.SortFunc(points, netip.Addr.Compare)
	points = slices.Compact(points)
	var open openRows
	next := 0 // rows[next:] start after the current point
	for k, p := range points {
		for next < len(rows) && rows[next].start == p {
			heap.Push(&open, &rows[next])
			next++
		}
		// Rows that ended before p leave when they reach the top.
		for len(open) > 0 && open[0].end.Less(p) {
			heap.Pop(&open)
		}
		if len(open) == 0 || open[0].asn == 0 {
			continue
		}
		top := open[0]
		end := top.end // the last point: every open row ends at the family's last address
		if k+1 < len(points) {
			end = points[k+1].Prev()
		}
		if n := len(out); n > 0 && out[n-1].asn == top.asn && out[n-1].name == top.name && out[n-1].end.Next() == p {
			out[n-1].end = end
			continue
		}
		out = append(out, asnRange{start: p, end: end, asn: top.asn, name: top.name})
	}
	return out
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

// Len is the number of routed ranges (rows of the file).
func (db *ASNDB) Len() int { return db.routed }
