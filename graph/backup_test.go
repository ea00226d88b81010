package graph

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"

	"github.com/mapthenet/mapthenet/data"
)

// rawDump is every live key of a store with its value and version: what a
// restore must give back exactly.
type rawEntry struct {
	value   string
	version uint64
}

func rawDump(t *testing.T, s *Store) map[string]rawEntry {
	t.Helper()
	out := map[string]rawEntry{}
	must(t, s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			out[string(it.Item().Key())] = rawEntry{string(v), it.Item().Version()}
		}
		return nil
	}))
	return out
}

// backupSource is a store whose backup spans several lists: visits, a
// value bigger than a list (and than the value threshold: in the value
// log), many small keys, a key written several times and a deleted one.
func backupSource(t *testing.T) *Store {
	t.Helper()
	s := openDir(t, filepath.Join(t.TempDir(), "store"))
	t.Cleanup(func() { s.Close() })
	var vs []*data.VisitResult
	for i := range 30 {
		vs = append(vs, visit(fmt.Sprintf("a%03d.example", i), t0, data.OutcomeOK, link("hub.example"), link(fmt.Sprintf("b%03d.example", i))))
	}
	must(t, s.RecordVisits(vs))
	put := func(k, v string) {
		must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Set([]byte(k), []byte(v)) }))
	}
	put("zz/big", strings.Repeat("b", 3*backupList/2))
	wb := s.db.NewWriteBatch()
	for i := range 3000 {
		must(t, wb.Set([]byte(fmt.Sprintf("zz/small/%04d", i)), []byte(strings.Repeat("s", 500))))
	}
	must(t, wb.Flush())
	put("zz/rewritten", "one")
	put("zz/rewritten", "two")
	put("zz/deleted", "gone")
	must(t, s.db.Update(func(txn *badger.Txn) error { return txn.Delete([]byte("zz/deleted")) }))
	return s
}

// backupLists splits a backup stream into its lists (length and the
// offset after it).
func backupLists(t *testing.T, b []byte) (lengths []uint64, ends []int) {
	t.Helper()
	for off := 0; off < len(b); {
		n := binary.LittleEndian.Uint64(b[off:])
		off += 8 + int(n)
		lengths, ends = append(lengths, n), append(ends, off)
	}
	return lengths, ends
}

// A backup written from one read transaction restores to the same keys,
// values and versions; its stream is Badger's (DB.Load reads it) with an
// empty list at each end.
func TestBackupRestoresSameRecords(t *testing.T) {
	s := backupSource(t)
	var buf bytes.Buffer
	v, err := s.Backup(&buf)
	must(t, err)
	if now, _ := s.Version(); v != now {
		t.Errorf("Backup returned version %d, the store's is %d", v, now)
	}
	lengths, _ := backupLists(t, buf.Bytes())
	if len(lengths) < 5 || lengths[0] != 0 || lengths[len(lengths)-1] != 0 {
		t.Errorf("list lengths %v: want an empty list at each end and several between", lengths)
	}
	for _, n := range lengths[1 : len(lengths)-1] {
		if n == 0 || n > 2*backupList+1<<10 {
			t.Errorf("a list of %d bytes (lengths %v)", n, lengths)
		}
	}
	to := filepath.Join(t.TempDir(), "restored")
	must(t, Restore(to, bytes.NewReader(buf.Bytes()), nil))
	r, err := Open(to, Options{ReadOnly: true})
	must(t, err)
	defer r.Close()
	want, got := rawDump(t, s), rawDump(t, r)
	if _, ok := got["zz/deleted"]; ok {
		t.Error("a deleted key was restored")
	}
	if got["zz/rewritten"].value != "two" {
		t.Errorf("zz/rewritten restored as %q, want its latest value", got["zz/rewritten"].value)
	}
	if len(got) != len(want) {
		t.Errorf("restored %d keys, the store has %d", len(got), len(want))
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			t.Errorf("key %q: restored %q@%d (found %v), want %q@%d", k, trim(g.value), g.version, ok, trim(w.value), w.version)
		}
	}
	if d, e := dumpStore(t, r), dumpStore(t, s); fmt.Sprint(d) != fmt.Sprint(e) {
		t.Errorf("the restored store's snapshot differs:\n%v\nwant\n%v", d, e)
	}
	if v, _ := r.Version(); v < want["zz/rewritten"].version {
		t.Errorf("the restored store's version %d is below its keys' (%d)", v, want["zz/rewritten"].version)
	}
}

func trim(s string) string {
	if len(s) > 20 {
		return s[:20] + "…"
	}
	return s
}

// A backup cut short, anywhere, or damaged is refused: a restore gives
// back the whole store or nothing. A backup made by Badger's own
// Stream.Backup (older mapthenet) still restores.
func TestRestoreRefusesCutBackup(t *testing.T) {
	s := backupSource(t)
	var buf bytes.Buffer
	_, err := s.Backup(&buf)
	must(t, err)
	b := buf.Bytes()
	_, ends := backupLists(t, b)
	huge := binary.LittleEndian.AppendUint64(bytes.Clone(b[:ends[1]]), 1<<40)
	cases := map[string][]byte{
		"empty":                        nil,
		"inside the first length":      b[:5],
		"after the leading empty list": b[:ends[0]],
		"inside a list":                b[:ends[1]-10],
		"before the end marker":        b[:ends[len(ends)-2]],
		"inside the end marker":        b[:len(b)-3],
		"a list after the end marker":  append(bytes.Clone(b), b[ends[0]:ends[1]]...),
		"a list of a terabyte":         huge,
	}
	for i := 1; i < len(ends)-1; i++ {
		cases[fmt.Sprintf("after list %d", i)] = b[:ends[i]]
	}
	for name, cut := range cases {
		t.Run(name, func(t *testing.T) {
			err := Restore(filepath.Join(t.TempDir(), "restored"), bytes.NewReader(cut), nil)
			if err == nil {
				t.Fatal("a cut backup was restored")
			}
			if strings.HasPrefix(name, "a list") {
				return // damage, not a cut: any error
			}
			if !errors.Is(err, ErrCutBackup) {
				t.Errorf("got %v, want ErrCutBackup", err)
			}
		})
	}
	t.Run("whole", func(t *testing.T) {
		must(t, Restore(filepath.Join(t.TempDir(), "restored"), bytes.NewReader(b), nil))
	})
	t.Run("Badger's Stream.Backup", func(t *testing.T) {
		var old bytes.Buffer
		stream := s.db.NewStream()
		stream.NumGo = 1
		_, err := stream.Backup(&old, 0)
		must(t, err)
		to := filepath.Join(t.TempDir(), "restored")
		must(t, Restore(to, bytes.NewReader(old.Bytes()), nil))
		r, err := Open(to, Options{ReadOnly: true})
		must(t, err)
		defer r.Close()
		if got, want := rawDump(t, r), rawDump(t, s); len(got) != len(want) || got["zz/big"] != want["zz/big"] {
			t.Errorf("restored %d keys, want %d", len(got), len(want))
		}
	})
}

// Backup's lists are about backupList bytes whatever the store holds; a
// benchmark of the cost a fleet node pays per shard it hands off.
func BenchmarkBackupSmallStore(b *testing.B) {
	s := openDir(b, filepath.Join(b.TempDir(), "store"))
	defer s.Close()
	var vs []*data.VisitResult
	for i := range 50 {
		vs = append(vs, visit(fmt.Sprintf("a%03d.example", i), t0.Add(time.Duration(i)), data.OutcomeOK, link("hub.example"), link("x.example")))
	}
	must(b, s.RecordVisits(vs))
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if _, err := s.Backup(&buf); err != nil {
			b.Fatal(err)
		}
	}
}
