package graph

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
)

// Damaged-store fixtures, made here from a real store: each kind of
// damage is refused on open with a *DamageError naming the file, never a
// panic or an empty or cut-short store, leaves the files as they were, and
// Verify finds it.

// closedStore makes a store with tables and a value-log entry (one edge
// set over the value threshold), closed cleanly.
func closedStore(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s := openDir(t, dir)
	var vs []*data.VisitResult
	for i := range 200 {
		vs = append(vs, visit(fmt.Sprintf("s%03d.example", i), t0, data.OutcomeOK,
			link(fmt.Sprintf("t%03d.example", i), "word"), link("hub.example")))
	}
	var many []data.Link
	for i := range 12000 {
		many = append(many, link(fmt.Sprintf("big%05d.example", i)))
	}
	vs = append(vs, visit("big.example", t0, data.OutcomeOK, many...))
	must(t, s.RecordVisits(vs))
	must(t, s.Close())
	return dir
}

// openStoreCopy makes a store whose write-ahead log holds committed
// visits: a copy of the directory of a store still open, as a killed
// process leaves it.
func openStoreCopy(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s := openDir(t, dir)
	defer s.Close()
	for b := range 13 { // 129 visits in 13 transactions
		var vs []*data.VisitResult
		for i := b * 10; i < min(129, b*10+10); i++ {
			vs = append(vs, visit(fmt.Sprintf("w%03d.example", i), t0, data.OutcomeOK, link("hub.example")))
		}
		must(t, s.RecordVisits(vs))
	}
	cp := filepath.Join(t.TempDir(), "killed")
	copyTree(t, dir, cp)
	return cp
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	must(t, os.MkdirAll(to, 0o755))
	entries, err := os.ReadDir(from)
	must(t, err)
	for _, e := range entries {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		// Sparse: a preallocated log is mostly zeros.
		in, err := os.Open(filepath.Join(from, e.Name()))
		must(t, err)
		st, err := in.Stat()
		must(t, err)
		last, err := lastNonZero(in, 0, st.Size())
		must(t, err)
		b := make([]byte, last+1)
		_, err = in.ReadAt(b, 0)
		in.Close()
		must(t, err)
		p := filepath.Join(to, e.Name())
		must(t, os.WriteFile(p, b, 0o644))
		must(t, os.Truncate(p, st.Size()))
	}
}

// biggest returns the largest file of dir with the extension.
func biggest(t *testing.T, dir, ext string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	var best string
	var size int64 = -1
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ext {
			continue
		}
		info, err := e.Info()
		must(t, err)
		if info.Size() > size {
			best, size = filepath.Join(dir, e.Name()), info.Size()
		}
	}
	if best == "" {
		t.Fatalf("no %s file in %s", ext, dir)
	}
	return best
}

// flip inverts one byte of path at frac of the way through the part
// with data (before the zeros a preallocated log ends in).
func flip(t *testing.T, path string, frac float64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	st, err := f.Stat()
	must(t, err)
	end, err := lastNonZero(f, 0, st.Size())
	must(t, err)
	i := logHeaderSize + int64(float64(end+1-logHeaderSize)*frac)
	var c [1]byte
	_, err = f.ReadAt(c[:], i)
	must(t, err)
	c[0] ^= 0xff
	_, err = f.WriteAt(c[:], i)
	must(t, err)
}

// flipAt inverts the byte of path at off, or at size+off for a negative
// off.
func flipAt(t *testing.T, path string, off int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	if off < 0 {
		off += int64(len(b))
	}
	b[off] ^= 0xff
	must(t, os.WriteFile(path, b, 0o644))
}

// tableIndex returns where a table's index starts and where the index's
// length is (Badger's layout: blocks, index, index length (4 bytes),
// checksum, checksum length (4 bytes)).
func tableIndex(t *testing.T, path string) (index, indexLen int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	must(t, err)
	n := int64(len(b))
	cl := int64(binary.BigEndian.Uint32(b[n-4:]))
	indexLen = n - 4 - cl - 4
	return indexLen - int64(binary.BigEndian.Uint32(b[indexLen:indexLen+4])), indexLen
}

// lastByte is the offset of the last non-zero byte of path (a log's
// last entry's last checksum byte).
func lastByte(t *testing.T, path string) int64 {
	t.Helper()
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	st, err := f.Stat()
	must(t, err)
	last, err := lastNonZero(f, 0, st.Size())
	must(t, err)
	return last
}

// copies returns a function that makes a fresh copy of the store at src:
// a fixture is built once per test (seconds under -race), copied per case.
func copies(src string) func(t *testing.T) string {
	return func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "store")
		copyTree(t, src, dir)
		return dir
	}
}

func TestDamagedStores(t *testing.T) {
	closedStore, openStoreCopy := copies(closedStore(t)), copies(openStoreCopy(t))
	cases := []struct {
		name   string
		make   func(t *testing.T) string
		damage func(t *testing.T, dir string) string // returns the file the error must name
	}{
		{"flipped byte in a table", closedStore, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".sst")
			flip(t, p, 0.3)
			return p
		}},
		{"flipped byte in a table's first block header", closedStore, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".sst")
			flipAt(t, p, 2)
			return p
		}},
		{"flipped byte in a table's index", closedStore, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".sst")
			index, indexLen := tableIndex(t, p)
			flipAt(t, p, (index+indexLen)/2)
			return p
		}},
		{"flipped byte in a table's index length", closedStore, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".sst")
			_, indexLen := tableIndex(t, p)
			flipAt(t, p, indexLen+1)
			return p
		}},
		{"flipped byte in a table's footer", closedStore, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".sst")
			flipAt(t, p, -2) // the index checksum's length
			return p
		}},
		{"flipped byte in the value log", closedStore, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".vlog")
			flip(t, p, 0.5)
			return p
		}},
		{"flipped byte in the value log's header", closedStore, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".vlog")
			flipAt(t, p, 3) // the data key id: Badger refuses only after making a new write-ahead log
			return p
		}},
		{"flipped byte in the write-ahead log", openStoreCopy, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".mem")
			flip(t, p, 0.2)
			return p
		}},
		{"flipped byte in the middle of the write-ahead log", openStoreCopy, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".mem")
			flip(t, p, 0.5)
			return p
		}},
		{"flipped byte in the write-ahead log's last entry", openStoreCopy, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".mem")
			flipAt(t, p, lastByte(t, p)) // its checksum: whole, so damage, not a write cut short
			return p
		}},
		{"flipped byte in the write-ahead log's header", openStoreCopy, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".mem")
			flipAt(t, p, 3)
			return p
		}},
		{"flipped byte in the key registry", closedStore, func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "KEYREGISTRY")
			flipAt(t, p, 20) // in the sanity text
			return p
		}},
		{"MANIFEST cut in half", closedStore, func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "MANIFEST")
			st, err := os.Stat(p)
			must(t, err)
			must(t, os.Truncate(p, st.Size()/2))
			return p
		}},
		{"MANIFEST cut to its header", closedStore, func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "MANIFEST")
			must(t, os.Truncate(p, 8))
			return p
		}},
		{"MANIFEST deleted", closedStore, func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "MANIFEST")
			must(t, os.Remove(p))
			return p
		}},
		{"table deleted", closedStore, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".sst")
			must(t, os.Remove(p))
			return p
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.make(t)
			file := tc.damage(t, dir)
			before := listing(t, dir)
			for _, ro := range []bool{false, true} {
				s, err := Open(dir, Options{ReadOnly: ro})
				if err == nil {
					// Damage found only on reading: a full read must say so.
					err = readEverything(s)
					s.Close()
				}
				var de *DamageError
				if !errors.As(err, &de) || !errors.Is(err, ErrDamaged) {
					t.Fatalf("read-only %v: got %v, want a *DamageError", ro, err)
				}
				if de.File != file {
					t.Errorf("read-only %v: the error names %s, want %s (%v)", ro, de.File, file, err)
				}
				if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "mapthenet store verify") {
					t.Errorf("want one line that says what to do, got %q", msg)
				}
			}
			if after := listing(t, dir); after != before {
				t.Errorf("the store's files changed:\nbefore %s\nafter  %s", before, after)
			}
			rep, err := Verify(dir, nil)
			must(t, err)
			if rep.OK() {
				t.Fatalf("Verify found nothing")
			}
			named := false
			for _, d := range rep.Damage {
				named = named || d.File == file
			}
			if !named {
				t.Errorf("Verify names %v, want %s among them", rep.Damage, file)
			}
		})
	}
}

// readEverything reads every record, as a rebuild does.
func readEverything(s *Store) error {
	if err := s.EnsureVerified(); err != nil {
		return err
	}
	return s.readAll(map[string]int{})
}

// listing is the directory's files: name, size, modification time and a
// hash of the content, so that a file written over (even with the same
// bytes) shows.
func listing(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	must(t, err)
	var b strings.Builder
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		info, err := e.Info()
		must(t, err)
		sum := "dir"
		if info.Mode().IsRegular() {
			sum = contentHash(t, filepath.Join(dir, e.Name()))
		}
		fmt.Fprintf(&b, "%s:%d:%d:%s ", e.Name(), info.Size(), info.ModTime().UnixNano(), sum)
	}
	return b.String()
}

// contentHash hashes a file's bytes up to its last non-zero one (a
// preallocated log is gigabytes of zeros).
func contentHash(t *testing.T, path string) string {
	t.Helper()
	last := lastByte(t, path)
	f, err := os.Open(path)
	must(t, err)
	defer f.Close()
	h := sha256.New()
	_, err = io.Copy(h, io.LimitReader(f, last+1))
	must(t, err)
	return fmt.Sprintf("%x", h.Sum(nil)[:8])
}

func TestVerifySoundStore(t *testing.T) {
	dir := closedStore(t)
	rep, err := Verify(dir, nil)
	must(t, err)
	if !rep.OK() {
		t.Fatalf("damage reported in a sound store: %v", rep.Damage)
	}
	if !rep.RecordsRead || rep.Records["domains"] == 0 || rep.Records["edges"] < 6000 {
		t.Errorf("records read: %v", rep.Records)
	}
	rep, err = Verify(openStoreCopy(t), nil)
	must(t, err)
	if !rep.OK() || len(rep.Notes) == 0 || rep.RecordsRead {
		t.Fatalf("a killed store: damage %v, notes %v, records read %v; want none, and a note that it was not closed",
			rep.Damage, rep.Notes, rep.RecordsRead)
	}
}

func TestNoStore(t *testing.T) {
	for _, ro := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "typo")
		_, err := Open(dir, Options{ReadOnly: ro})
		if !errors.Is(err, ErrNoStore) {
			t.Errorf("read-only %v: got %v, want ErrNoStore", ro, err)
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("read-only %v: Open made %s", ro, dir)
		}
	}
	// An empty directory is no store either; Create makes one there.
	dir := t.TempDir()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrNoStore) {
		t.Errorf("empty dir: got %v, want ErrNoStore", err)
	}
	s, err := Open(dir, Options{Create: true})
	must(t, err)
	must(t, s.Close())
	s, err = Open(dir, Options{})
	must(t, err)
	must(t, s.Close())
}

// Durable when logged: the store syncs every commit before it returns.
func TestSyncWrites(t *testing.T) {
	s := openDir(t, t.TempDir())
	defer s.Close()
	if !s.SyncWrites() {
		t.Fatal("the store is not opened with SyncWrites")
	}
}

// A backup taken while visits are being recorded restores to a store
// with every visit committed before it began, each whole.
func TestBackupRestoreDuringWrites(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := openDir(t, dir)
	defer s.Close()
	var vs []*data.VisitResult
	for i := range 50 {
		vs = append(vs, visit(fmt.Sprintf("a%03d.example", i), t0, data.OutcomeOK, link("hub.example"), link("x.example")))
	}
	must(t, s.RecordVisits(vs))
	before := dumpStore(t, s)
	done := make(chan error)
	go func() {
		for i := range 40 {
			at := t0.Add(time.Duration(i+1) * time.Hour)
			if err := s.RecordVisit(visit(fmt.Sprintf("a%03d.example", i%50), at, data.OutcomeOK, link("hub.example"), link(fmt.Sprintf("n%03d.example", i)))); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	pr, pw := io.Pipe()
	go func() {
		_, err := s.Backup(pw)
		pw.CloseWithError(err)
	}()
	to := filepath.Join(t.TempDir(), "restored")
	must(t, Restore(to, pr, nil))
	must(t, <-done)
	r, err := Open(to, Options{ReadOnly: true})
	must(t, err)
	defer r.Close()
	got := dumpStore(t, r)
	// Every domain's visits in the backup are those of before, then a run
	// of the later ones: never a visit without its edges.
	visits := map[uint32]int{}
	for _, v := range got.Visits {
		visits[v.DomainID]++
	}
	for _, v := range before.Visits {
		if visits[v.DomainID] == 0 {
			t.Errorf("domain %d's visit before the backup is missing", v.DomainID)
		}
	}
	if err := Restore(to, strings.NewReader(""), nil); !errors.Is(err, ErrNotEmpty) {
		t.Errorf("restore into a store: got %v, want ErrNotEmpty", err)
	}
}

func TestVerifyRefusesStoreInUse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s := openDir(t, dir)
	defer s.Close()
	if _, err := Verify(dir, nil); !errors.Is(err, ErrLocked) {
		t.Errorf("got %v, want ErrLocked", err)
	}
}

// Checking the tables leaves them, and no open file behind.
func TestVerifyLeavesTables(t *testing.T) {
	dir := closedStore(t)
	before := listing(t, dir)
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	n := fds()
	for range 3 {
		rep, err := Verify(dir, nil)
		must(t, err)
		if !rep.OK() {
			t.Fatal(rep.Damage)
		}
	}
	if got := fds(); got > n {
		t.Errorf("%d open files after verifying, %d before", got, n)
	}
	if after := listing(t, dir); after != before {
		t.Errorf("files changed:\n%s\n%s", before, after)
	}
}

// A table the MANIFEST does not list (a crash between writing and
// recording it) is moved aside on a writable open, never deleted; a
// read-only open, where Badger would delete it, refuses.
func TestUnlistedTableMovedAside(t *testing.T) {
	dir := closedStore(t)
	b, err := os.ReadFile(biggest(t, dir, ".sst"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "000099.sst"), b, 0o644))
	if _, err := Open(dir, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "does not list") {
		t.Fatalf("read-only open: %v", err)
	}
	s, err := Open(dir, Options{})
	must(t, err)
	must(t, s.Close())
	if _, err := os.Stat(filepath.Join(dir, "orphaned", "000099.sst")); err != nil {
		t.Errorf("the unlisted table was not kept: %v", err)
	}
}

// A log whose tail Badger must cut (a write cut short by a kill or a power
// loss: the rest of its entry is zeros) opens, and the cut is logged
// loudly, with the file and how much, never silently; everything
// committed before it is there.
func TestCutTailReported(t *testing.T) {
	closedStore, openStoreCopy := copies(closedStore(t)), copies(openStoreCopy(t))
	cases := []struct {
		name   string
		make   func(t *testing.T) string
		cut    func(t *testing.T, dir string) string // returns the file cut
		visits int                                   // visits left
	}{
		{"write-ahead log's last transaction cut short", openStoreCopy, func(t *testing.T, dir string) string {
			p := biggest(t, dir, ".mem")
			f, err := os.OpenFile(p, os.O_RDWR, 0)
			must(t, err)
			defer f.Close()
			_, err = f.WriteAt(make([]byte, 16), lastByte(t, p)-15) // the end of its commit entry
			must(t, err)
			return p
		}, 120}, // 129 in 13 transactions; the last held 9
		{"value log's last entry cut short", closedStore, func(t *testing.T, dir string) string {
			b, err := os.ReadFile(biggest(t, dir, ".vlog"))
			must(t, err)
			p := lastLog(t, dir, ".vlog")
			f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
			must(t, err)
			defer f.Close()
			_, err = f.Write(b[logHeaderSize : logHeaderSize+1000]) // the start of an entry, not its end
			must(t, err)
			return p
		}, 201},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.make(t)
			file := tc.cut(t, dir)
			var logged bytes.Buffer
			s, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
			must(t, err)
			defer s.Close()
			out := logged.String()
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "file="+file) ||
				!strings.Contains(out, "bytes_dropped=") || strings.Contains(out, "bytes_dropped=0 ") {
				t.Errorf("no warning naming %s and how much was dropped; the log:\n%s", file, out)
			}
			if got := len(dumpStore(t, s).Visits); got != tc.visits {
				t.Errorf("%d visits, want %d", got, tc.visits)
			}
		})
	}
}

// lastLog returns the log file of dir with the extension and the highest
// id (the one Badger cuts on open).
func lastLog(t *testing.T, dir, ext string) string {
	t.Helper()
	files, err := listStore(dir)
	must(t, err)
	names := files.vlogs
	if ext == ".mem" {
		names = files.mems
	}
	if len(names) == 0 {
		t.Fatalf("no %s file in %s", ext, dir)
	}
	return filepath.Join(dir, names[len(names)-1])
}

// Version moves on with every write and stays put without one: a store
// whose version is the one read before its last backup began needs no
// new backup (a fleet node's clean handoff of an unchanged shard).
func TestVersion(t *testing.T) {
	s := openDir(t, filepath.Join(t.TempDir(), "store"))
	defer s.Close()
	version := func() uint64 {
		t.Helper()
		v, err := s.Version()
		must(t, err)
		return v
	}
	v0 := version()
	must(t, s.RecordVisit(visit("a.example", t0, data.OutcomeOK, link("b.example"))))
	v1 := version()
	if v1 <= v0 {
		t.Fatalf("a visit left the version at %d (was %d)", v1, v0)
	}
	if _, err := s.Backup(io.Discard); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Domain("a.example"); err != nil {
		t.Fatal(err)
	}
	if v := version(); v != v1 {
		t.Errorf("a backup and a read moved the version from %d to %d", v1, v)
	}
	must(t, s.SetOwnerToken(7))
	if v := version(); v <= v1 {
		t.Errorf("a meta write left the version at %d", v)
	}
}
