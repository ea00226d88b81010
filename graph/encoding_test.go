package graph

import (
	"bytes"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
)

func TestOutcomeCodes(t *testing.T) {
	for _, o := range data.Outcomes {
		c, ok := outcomeCodes[o]
		if !ok || c == 0 || outcomeByCode[c] != o {
			t.Errorf("outcome %q has no stable code", o)
		}
	}
	if len(outcomeCodes) != len(data.Outcomes)+1 {
		t.Errorf("%d codes for %d outcomes", len(outcomeCodes), len(data.Outcomes))
	}
}

func TestStateRoundTrip(t *testing.T) {
	yes, no := true, false
	for _, st := range []data.DomainState{
		{ID: 7, Name: "a.example"},
		{ID: 8, Name: "xn--bcher-kva.de", FirstSeen: t0, LastVisit: t1, LastStatus: 503,
			LastOutcome: data.OutcomeThrottled, HTTPS: &yes, IPv6: &no, ASN: 4200000000,
			NetworkOperator: "Net ÄB", OptedOut: true, Failures: 3, RetryAfter: 2 * time.Hour, FailingSince: t1, Seeded: true},
		// A format 2 record: its retry time, no Retry-After.
		{ID: 9, Name: "c.example", LastVisit: t1, LastOutcome: data.OutcomeTimeout, Failures: 1, RetryAt: t2, FailingSince: t1},
		{ID: 10, Name: "d.example", LastVisit: t1, LastOutcome: data.OutcomeThrottled, Failures: 1, RetryAfter: time.Minute}, // no FailingSince
	} {
		adj := encodeAdj(nil, []edge{{dst: 1, first: 5, last: 9, words: []string{"a"}}, {dst: 300, first: 9, last: 9, nofollow: true, sitewide: true}})
		var got data.DomainState
		tail, err := decodeDomain(st.ID, encodeDomain(nil, &st, adj), &got)
		if err != nil || !reflect.DeepEqual(got, st) || !bytes.Equal(tail, adj) {
			t.Errorf("round trip of %+v: %+v, %v", st, got, err)
		}
		edges, err := decodeAdj(st.ID, tail, nil)
		want := []edge{{dst: 1, first: 5, last: 9, words: []string{"a"}}, {dst: 300, first: 9, last: 9, nofollow: true, sitewide: true}}
		if err != nil || !reflect.DeepEqual(edges, want) {
			t.Errorf("edges %+v, %v", edges, err)
		}
	}
}

// FuzzDecode: damaged values give errors, never panics.
func FuzzDecode(f *testing.F) {
	st := data.DomainState{Name: "a.example", FirstSeen: t0, LastOutcome: data.OutcomeOK}
	f.Add(encodeDomain(nil, &st, encodeAdj(nil, []edge{{dst: 3, first: 1, last: 2, words: []string{"w"}}})))
	f.Add(encodeVisit(nil, visit("a.example", t0, data.OutcomeGone)))
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, b []byte) {
		var st data.DomainState
		if tail, err := decodeDomain(1, b, &st); err == nil {
			decodeAdj(1, tail, nil)
		}
		decodeAdj(1, b, nil)
		var v data.VisitLogEntry
		decodeVisit(visitKey(1, t0), b, &v)
		decodeRemoval("a.example", b)
	})
}

func TestCorruptRecord(t *testing.T) {
	s := openMem(t)
	must(t, s.AddDomains([]string{"a.example"}, t0, false))
	must(t, s.db.Update(func(txn *badger.Txn) error {
		return txn.Set(idKey(prefixDomain, 0), []byte{3, 1, 2})
	}))
	// Damaged under the store, as on disk: the record cache still holds
	// what this process wrote, and a new process would start without it.
	s.rcache.reset()
	if _, _, err := s.Domain("a.example"); !errors.Is(err, errCorrupt) {
		t.Errorf("Domain on a damaged record: %v", err)
	}
	sn, err := s.Snapshot()
	must(t, err)
	defer sn.Close()
	if err := sn.Domains(func(*data.DomainState) error { return nil }); !errors.Is(err, errCorrupt) {
		t.Errorf("Domains on a damaged record: %v", err)
	}
	if err := s.RecordVisit(visit("a.example", t1, data.OutcomeOK)); !errors.Is(err, errCorrupt) {
		t.Errorf("RecordVisit on a damaged record: %v", err)
	}
}

func TestGC(t *testing.T) {
	s := openDir(t, t.TempDir())
	defer s.Close()
	for i := range 50 {
		must(t, s.RecordVisit(visit("a.example", t0.Add(time.Duration(i)*time.Hour), data.OutcomeOK, link("b.example"))))
	}
	must(t, s.GC())
	must(t, openMem(t).GC()) // nothing to do in memory
}

// TestBadgerLogger: Badger's warnings and errors reach the slog logger;
// its progress chatter does not at warning level.
func TestBadgerLogger(t *testing.T) {
	var buf bytes.Buffer
	l := badgerLogger{slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))}
	l.Infof("opened %d tables\n", 3)
	l.Debugf("detail")
	l.Warningf("slow %s", "compaction")
	l.Errorf("bad %d", 1)
	out := buf.String()
	if strings.Contains(out, "tables") || strings.Contains(out, "detail") ||
		!strings.Contains(out, "level=WARN msg=\"slow compaction\" component=badger") ||
		!strings.Contains(out, "level=ERROR msg=\"bad 1\"") {
		t.Errorf("log:\n%s", out)
	}
}
