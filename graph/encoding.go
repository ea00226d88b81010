package graph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// Values are written with encoding/binary varints rather than JSON or
// gob: the store holds one value per domain, per source domain's edge set
// and per visit, hundreds of millions of them, and a varint record is a
// fraction of the size and decodes without reflection or allocation. The
// layout of each value is written down in FORMAT.md; change both together.

// Key prefixes (FORMAT.md, "Keys").
const (
	prefixMeta    = "m/"
	prefixName    = "n/"
	prefixDomain  = "d/"
	prefixFollow  = "f/"
	prefixVisit   = "v/"
	prefixRemoved = "x/"
)

var (
	keyFormat = []byte("m/format")
	keyNextID = []byte("m/nextid")
)

func nameKey(name string) []byte { return appendNameKey(nil, name) }

// appendNameKey appends name's n/ key to b.
func appendNameKey(b []byte, name string) []byte { return append(append(b, prefixName...), name...) }
func removedKey(name string) []byte {
	return append([]byte(prefixRemoved), name...)
}

func idKey(prefix string, id uint32) []byte {
	k := make([]byte, len(prefix)+4)
	copy(k, prefix)
	binary.BigEndian.PutUint32(k[len(prefix):], id)
	return k
}

func visitKey(id uint32, started time.Time) []byte {
	k := make([]byte, len(prefixVisit)+12)
	copy(k, prefixVisit)
	binary.BigEndian.PutUint32(k[2:], id)
	// Unix nanoseconds as unsigned big-endian sort in time order for every
	// date after 1970, which is all a crawl can produce.
	binary.BigEndian.PutUint64(k[6:], uint64(timeNanos(started)))
	return k
}

// idFromKey reads the BE32 id that follows a two-byte prefix.
func idFromKey(k []byte) (uint32, error) {
	if len(k) < 6 {
		return 0, fmt.Errorf("graph: short key %q", k)
	}
	return binary.BigEndian.Uint32(k[2:6]), nil
}

// Times are Unix nanoseconds; the zero time.Time is 0.
func timeNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func nanosTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// Outcome codes are fixed here, not taken from data.Outcomes' order, so
// that the stored format does not move if that list does.
var outcomeCodes = map[data.Outcome]byte{
	"":                            0,
	data.OutcomeOK:                1,
	data.OutcomePartial:           2,
	data.OutcomeMoved:             3,
	data.OutcomeOptedOut:          4,
	data.OutcomeRobotsUnavailable: 5,
	data.OutcomeThrottled:         6,
	data.OutcomeBotProtection:     7,
	data.OutcomeTimeout:           8,
	data.OutcomeDNSError:          9,
	data.OutcomeConnectError:      10,
	data.OutcomeHTTPError:         11,
	data.OutcomeGone:              12,
}

var outcomeByCode = func() []data.Outcome {
	out := make([]data.Outcome, len(outcomeCodes))
	for o, c := range outcomeCodes {
		out[c] = o
	}
	return out
}()

// enc appends varints to a byte slice.
type enc struct{ b []byte }

func (e *enc) uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *enc) varint(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *enc) time(t time.Time) { e.varint(timeNanos(t)) }
func (e *enc) byte(c byte)      { e.b = append(e.b, c) }
func (e *enc) str(s string) {
	e.uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}
func (e *enc) outcome(o data.Outcome) { e.byte(outcomeCodes[o]) }

var errCorrupt = errors.New("graph: corrupt value")

// dec reads what enc wrote; the first failure sticks in err and every
// later read returns zero, so callers check err once at the end.
type dec struct {
	b   []byte
	err error
}

func (d *dec) fail() {
	if d.err == nil {
		d.err = errCorrupt
	}
	d.b = nil
}

func (d *dec) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *dec) int() int { return int(d.varint()) }

func (d *dec) time() time.Time { return nanosTime(d.varint()) }

func (d *dec) byte() byte {
	if len(d.b) < 1 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *dec) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// bytes reads a string's bytes, a view into the value.
func (d *dec) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	b := d.b[:n]
	d.b = d.b[n:]
	return b
}

func (d *dec) skipStr() {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail()
		return
	}
	d.b = d.b[n:]
}

func (d *dec) outcome() data.Outcome {
	c := d.byte()
	if int(c) >= len(outcomeByCode) {
		d.fail()
		return ""
	}
	return outcomeByCode[c]
}

// done reports the sticky error, and trailing bytes as corruption,
// naming what was read (formatted only on failure: this is the hot path).
func (d *dec) done(what string, id any) error {
	if d.err == nil && len(d.b) != 0 {
		d.err = errCorrupt
	}
	if d.err != nil {
		return fmt.Errorf("%w: %s %v", d.err, what, id)
	}
	return nil
}

// Domain state flags.
const (
	flagHTTPSKnown = 1 << iota
	flagHTTPS
	flagIPv6Known
	flagIPv6
	flagOptedOut
	flagSeeded
	flagFollowedIn // format 2: set when the record was written anyway (batch.markFollowed)
)

// encodeState writes a domain's state. FollowedIn is written when set, but
// it is also true when the domain has an f/<id> key: marking a link
// target whose record the batch does not rewrite is a blind write of that
// key instead.
func encodeState(buf []byte, s *data.DomainState) []byte {
	var f uint64
	if s.HTTPS != nil {
		f |= flagHTTPSKnown
		if *s.HTTPS {
			f |= flagHTTPS
		}
	}
	if s.IPv6 != nil {
		f |= flagIPv6Known
		if *s.IPv6 {
			f |= flagIPv6
		}
	}
	if s.OptedOut {
		f |= flagOptedOut
	}
	if s.Seeded {
		f |= flagSeeded
	}
	if s.FollowedIn {
		f |= flagFollowedIn
	}
	e := enc{buf[:0]}
	e.uvarint(f)
	e.str(s.Name)
	e.time(s.FirstSeen)
	e.time(s.LastVisit)
	e.varint(int64(s.LastStatus))
	e.outcome(s.LastOutcome)
	e.varint(s.ASN)
	e.str(s.NetworkOperator)
	e.uvarint(uint64(s.Failures))
	e.time(s.RetryAt) // a format 2 store's retry time, kept until the next visit
	// Optional and last: absent costs nothing on the many domains that are
	// not failing, and older records read the same.
	if !s.FailingSince.IsZero() || s.RetryAfter != 0 {
		e.time(s.FailingSince)
	}
	if s.RetryAfter != 0 {
		e.varint(int64(s.RetryAfter)) // format 3
	}
	return e.b
}

// encodeDomain writes a d/<id> value: the state's length and bytes, then
// the encoded out-edges (nothing when there are none).
func encodeDomain(buf []byte, s *data.DomainState, adj []byte) []byte {
	return appendDomain(buf[:0], encodeState(nil, s), adj)
}

// appendDomain appends a d/<id> value of an encoded state and edges.
func appendDomain(buf, st, adj []byte) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(st)))
	buf = append(buf, st...)
	return append(buf, adj...)
}

// decodeDomain reads a d/<id> value's state and returns its encoded edges.
func decodeDomain(id uint32, b []byte, s *data.DomainState) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("%w: domain record of id %d", errCorrupt, id)
	}
	b = b[k:]
	return b[n:], decodeState(id, b[:n], s)
}

func decodeState(id uint32, b []byte, s *data.DomainState) error {
	d := dec{b: b}
	f := d.uvarint()
	*s = data.DomainState{ID: id}
	s.Name = d.str()
	s.FirstSeen = d.time()
	s.LastVisit = d.time()
	s.LastStatus = d.int()
	s.LastOutcome = d.outcome()
	s.ASN = d.varint()
	s.NetworkOperator = d.str()
	s.Failures = int(d.uvarint())
	s.RetryAt = d.time()
	if len(d.b) > 0 {
		s.FailingSince = d.time()
	}
	if len(d.b) > 0 {
		s.RetryAfter = time.Duration(d.varint())
	}
	if f&flagHTTPSKnown != 0 {
		v := f&flagHTTPS != 0
		s.HTTPS = &v
	}
	if f&flagIPv6Known != 0 {
		v := f&flagIPv6 != 0
		s.IPv6 = &v
	}
	s.OptedOut = f&flagOptedOut != 0
	s.Seeded = f&flagSeeded != 0
	s.FollowedIn = f&flagFollowedIn != 0
	return d.done("domain state of id", id)
}

// edge is one out-edge as kept in a source's adjacency value.
type edge struct {
	dst      uint32
	first    int64 // unix nanos
	last     int64
	nofollow bool
	sitewide bool
	words    []string
}

const (
	edgeNofollow = 1 << iota
	edgeSitewide
)

// encodeAdj writes a source's out-edges, sorted by dst. Destination ids
// are stored as deltas from the previous one and times as offsets from the
// newest last_seen, so an edge seen in the last visit costs a few bytes
// plus its words.
func encodeAdj(buf []byte, edges []edge) []byte {
	var base int64
	for i := range edges {
		base = max(base, edges[i].last)
	}
	e := enc{buf[:0]}
	e.uvarint(uint64(len(edges)))
	e.varint(base)
	var prev uint32
	for i := range edges {
		ed := &edges[i]
		e.uvarint(uint64(ed.dst - prev))
		prev = ed.dst
		var f byte
		if ed.nofollow {
			f |= edgeNofollow
		}
		if ed.sitewide {
			f |= edgeSitewide
		}
		e.byte(f)
		e.varint(base - ed.first)
		e.varint(base - ed.last)
		e.uvarint(uint64(len(ed.words)))
		for _, w := range ed.words {
			e.str(w)
		}
	}
	return e.b
}

// decodeAdj appends src's edges from b to out.
func decodeAdj(src uint32, b []byte, out []edge) ([]edge, error) {
	return decodeAdjWords(src, b, out, true)
}

// decodeAdjWords is decodeAdj, skipping the words unless words is set: a
// complete visit replaces them and needs only the old first_seen.
func decodeAdjWords(src uint32, b []byte, out []edge, words bool) ([]edge, error) {
	return decodeAdjCached(src, b, out, words, nil)
}

// wordCache makes the words of the edges a snapshot streams share their
// strings and take their slices from large blocks: link words repeat
// endlessly ("home", "news"), and a string and a slice allocated per edge
// were most of the allocations of streaming ten million edges.
type wordCache struct {
	m     map[string]string
	block []string
}

// maxCachedWords bounds the cache; words beyond it are allocated.
const maxCachedWords = 1 << 16

func newWordCache() *wordCache { return &wordCache{m: make(map[string]string)} }

func (c *wordCache) word(b []byte) string {
	if s, ok := c.m[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(c.m) < maxCachedWords {
		c.m[s] = s
	}
	return s
}

// words returns a slice of n strings of its own (capacity n).
func (c *wordCache) words(n int) []string {
	if n > len(c.block) {
		c.block = make([]string, max(4096, n))
	}
	w := c.block[:n:n]
	c.block = c.block[n:]
	return w
}

// decodeAdjCached is decodeAdjWords taking words from wc when it is not
// nil.
func decodeAdjCached(src uint32, b []byte, out []edge, words bool, wc *wordCache) ([]edge, error) {
	d := dec{b: b}
	n := d.uvarint()
	if n > uint64(len(b)) { // every edge takes at least one byte
		return out, fmt.Errorf("%w: edge count of id %d", errCorrupt, src)
	}
	base := d.varint()
	var prev uint32
	for i := uint64(0); i < n && d.err == nil; i++ {
		var ed edge
		delta := d.uvarint()
		if delta > uint64(^uint32(0)-prev) || (i > 0 && delta == 0) {
			d.fail()
			break
		}
		ed.dst = prev + uint32(delta)
		prev = ed.dst
		f := d.byte()
		ed.nofollow = f&edgeNofollow != 0
		ed.sitewide = f&edgeSitewide != 0
		ed.first = base - d.varint()
		ed.last = base - d.varint()
		nw := d.uvarint()
		if nw > uint64(len(d.b)) {
			d.fail()
			break
		}
		switch {
		case nw > 0 && words && wc != nil:
			ed.words = wc.words(int(nw))
			for j := range ed.words {
				ed.words[j] = wc.word(d.bytes())
			}
		case nw > 0 && words:
			ed.words = make([]string, nw)
			for j := range ed.words {
				ed.words[j] = d.str()
			}
		default:
			for range nw {
				d.skipStr()
			}
		}
		out = append(out, ed)
	}
	return out, d.done("edges of id", src)
}

func encodeVisit(buf []byte, v *data.VisitResult) []byte {
	e := enc{buf[:0]}
	e.time(v.FinishedAt)
	e.time(v.RobotsReadAt)
	e.varint(int64(v.RobotsStatus))
	e.outcome(v.Outcome)
	e.varint(int64(v.HTTPStatus))
	e.varint(int64(v.Pages))
	e.varint(v.Bytes)
	e.str(v.Error)
	return e.b
}

func decodeVisit(key, b []byte, v *data.VisitLogEntry) error {
	if len(key) != len(prefixVisit)+12 {
		return fmt.Errorf("%w: visit key %q", errCorrupt, key)
	}
	*v = data.VisitLogEntry{
		DomainID:  binary.BigEndian.Uint32(key[2:6]),
		StartedAt: nanosTime(int64(binary.BigEndian.Uint64(key[6:]))),
	}
	d := dec{b: b}
	v.FinishedAt = d.time()
	v.RobotsReadAt = d.time()
	v.RobotsStatus = d.int()
	v.Outcome = d.outcome()
	v.HTTPStatus = d.int()
	v.Pages = d.int()
	v.Bytes = d.varint()
	v.Error = d.str()
	return d.done("visit of id", v.DomainID)
}

// Removal is one entry of the removal list: a domain whose owner proved
// control and asked to be left out. It never returns to the store.
type Removal struct {
	Name   string
	Reason string
	Proof  string
	At     time.Time
}

func encodeRemoval(r *Removal) []byte {
	e := enc{}
	e.time(r.At)
	e.str(r.Reason)
	e.str(r.Proof)
	return e.b
}

func decodeRemoval(name string, b []byte) (Removal, error) {
	d := dec{b: b}
	r := Removal{Name: name}
	r.At = d.time()
	r.Reason = d.str()
	r.Proof = d.str()
	return r, d.done("removal of", name)
}
