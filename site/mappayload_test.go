package site

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

// TestMapPayload reads the map's parts as the page does and checks them
// against the snapshot: draw order, positions to 16 bits and exact, ranks,
// sizes, the default colouring in points.bin and the others in
// details.bin.
func TestMapPayload(t *testing.T) {
	ts := newTestSite(t, smallWorld, nil)
	var meta mapMeta
	ts.getJSON("/api/map/meta.json", &meta)
	_, _, points := ts.get("/api/map/points.bin?s=" + meta.Snapshot)
	_, _, details := ts.get("/api/map/details.bin?s=" + meta.Snapshot)
	_, _, names := ts.get("/api/map/names.txt")
	n := meta.Placed
	lines := strings.Split(strings.TrimSuffix(names, "\n"), "\n")
	if n == 0 || len(lines) != n || len(points) != meta.Bytes || len(details) != meta.DetailBytes {
		t.Fatalf("%d placed, %d names, points %d bytes (meta %d), details %d (meta %d)", n, len(lines), len(points), meta.Bytes,
			len(details), meta.DetailBytes)
	}
	id := map[string]int{}
	for i, name := range ts.w.names {
		id[name] = i
	}
	sec := func(buf string, s section, size int) string {
		if s.Length == 0 || s.Offset%size != 0 || s.Offset+s.Length*size > len(buf) {
			t.Fatalf("section %+v of %d bytes", s, len(buf))
		}
		return buf[s.Offset : s.Offset+s.Length*size]
	}
	xy16, xy, rank := sec(points, meta.Sections["xy16"], 2), sec(details, meta.DetailSections["xy"], 4), sec(details, meta.DetailSections["rank"], 4)
	b := meta.Bounds
	qx, qy := float64(b[2]-b[0])/65535, float64(b[3]-b[1])/65535
	var sizes []int
	for _, r := range meta.SizeRuns {
		for range r[1] {
			sizes = append(sizes, r[0])
		}
	}
	if len(sizes) != n {
		t.Fatalf("size runs cover %d points of %d", len(sizes), n)
	}
	spread := map[[2]int]bool{}
	for i, name := range lines {
		d := n - 1 - i // draw order
		if !ts.w.placed[id[name]] {
			t.Fatalf("point %d, %s, is not placed", i, name)
		}
		if got, want := int64(binary.LittleEndian.Uint32([]byte(rank[4*d:]))), ts.w.rank[id[name]]; got != want {
			t.Fatalf("point %d, %s: rank %d, want %d", i, name, got, want)
		}
		if i > 0 && ts.w.rank[id[name]] > 0 && sizes[d] > sizes[d+1] {
			t.Fatalf("point %d, %s, is drawn bigger than the better-ranked one before it", i, name)
		}
		x := float64(math.Float32frombits(binary.LittleEndian.Uint32([]byte(xy[8*d:]))))
		y := float64(math.Float32frombits(binary.LittleEndian.Uint32([]byte(xy[8*d+4:]))))
		x16 := float64(b[0]) + float64(binary.LittleEndian.Uint16([]byte(xy16[4*d:])))*qx
		y16 := float64(b[1]) + float64(binary.LittleEndian.Uint16([]byte(xy16[4*d+2:])))*qy
		if math.Abs(x16-x) > qx || math.Abs(y16-y) > qy || x < float64(b[0]) || x > float64(b[2]) {
			t.Fatalf("point %d, %s: at (%g, %g), to 16 bits (%g, %g), bounds %v", i, name, x, y, x16, y16, b)
		}
		spread[[2]int{int(x / 10), int(y / 10)}] = true
	}
	if len(spread) < 20 {
		t.Errorf("the points sit in %d cells of 10 by 10", len(spread))
	}
	if sizes[n-1] != 255 || lines[0] != ts.w.names[ts.w.ranked[0]] {
		t.Errorf("the top domain %s is drawn at size %d", lines[0], sizes[n-1])
	}
	// Every colouring, the default with the first frame.
	for k, c := range meta.Colorings {
		part, secs := details, meta.DetailSections
		if k == 0 {
			part, secs = points, meta.Sections
		}
		col := sec(part, secs["color_"+string(c.By)], 1)
		for d := range n {
			if int(col[d]) >= len(c.Legend) {
				t.Fatalf("colour by %s: point %d has legend entry %d of %d", c.By, n-1-d, col[d], len(c.Legend))
			}
		}
	}
}
