package main

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mapthenet/mapthenet/data"
	"github.com/mapthenet/mapthenet/graph"
)

// Damaged stores, made here, against every command that opens the store:
// each ends with one line naming the damaged file and what to do, exit 1,
// no panic; current stays where it was and no file of the store is
// written; store verify names the file.

const damageNow = "2026-12-02T03:00:00Z"

// closedDataDir is a data dir with a closed store whose value log holds
// data (one edge set over Badger's value threshold) and a current
// snapshot.
func closedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	fillStore(t, dir)
	s, err := graph.Open(storePath(dir), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var links []data.Link
	for i := range 12000 {
		links = append(links, data.Link{Dst: fmt.Sprintf("big%05d.example", i)})
	}
	at := testNow.Add(-time.Hour)
	if err := s.RecordVisit(&data.VisitResult{Domain: "hub.example", StartedAt: at, FinishedAt: at.Add(time.Minute),
		Outcome: data.OutcomeOK, Complete: true, Pages: 1, Links: links}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z", "--map-top", "0"); code != 0 {
		t.Fatalf("rebuild: exit %d: %s", code, errOut)
	}
	return dir
}

// killedDataDir is a copy of a data dir taken while its store was open
// and writing, as a crawl killed with -9 leaves it: committed visits in
// the write-ahead log only.
func killedDataDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	fillStore(t, dir)
	if code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z", "--map-top", "0"); code != 0 {
		t.Fatalf("rebuild: exit %d: %s", code, errOut)
	}
	s, err := graph.Open(storePath(dir), graph.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for b := range 10 {
		var vs []*data.VisitResult
		for i := range 10 {
			at := testNow.Add(time.Duration(b) * time.Minute)
			vs = append(vs, &data.VisitResult{Domain: fmt.Sprintf("w%02d%02d.example", b, i), StartedAt: at,
				FinishedAt: at.Add(time.Second), Outcome: data.OutcomeOK, Complete: true, Pages: 1,
				Links: []data.Link{{Dst: "a.example"}}})
		}
		if err := s.RecordVisits(vs); err != nil {
			t.Fatal(err)
		}
	}
	killed := t.TempDir()
	copySparse(t, dir, killed)
	return killed
}

// copySparse copies the tree at from into to, holes as holes (a store
// not closed has a 2 GiB value log, nearly all hole); LOCK is left out.
func copySparse(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.Name() == "LOCK" {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		}
		in, err := os.Open(path)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, info.Mode().Perm())
		if err != nil {
			return err
		}
		defer out.Close()
		if err := out.Truncate(info.Size()); err != nil {
			return err
		}
		for off := int64(0); off < info.Size(); {
			start, err := syscall.Seek(int(in.Fd()), off, 3) // SEEK_DATA
			if errors.Is(err, syscall.ENXIO) {
				break
			}
			if err != nil {
				return err
			}
			end, err := syscall.Seek(int(in.Fd()), start, 4) // SEEK_HOLE
			if err != nil {
				return err
			}
			if _, err := io.Copy(io.NewOffsetWriter(out, start), io.NewSectionReader(in, start, end-start)); err != nil {
				return err
			}
			off = end
		}
		return out.Close()
	})
	if err != nil {
		t.Fatal(err)
	}
}

// storeListing is every store file's name, size, modification time and
// content hash (holes skipped).
func storeListing(t *testing.T, dataDir string) string {
	t.Helper()
	dir := storePath(dataDir)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		if e.Name() == "LOCK" {
			continue
		}
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		if info.Mode().IsRegular() {
			f, err := os.Open(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			for off := int64(0); off < info.Size(); {
				start, err := syscall.Seek(int(f.Fd()), off, 3)
				if err != nil {
					break
				}
				end, _ := syscall.Seek(int(f.Fd()), start, 4)
				fmt.Fprintf(h, "@%d", start)
				io.Copy(h, io.NewSectionReader(f, start, end-start))
				off = end
			}
			f.Close()
		}
		fmt.Fprintf(&b, "%s:%d:%d:%x\n", e.Name(), info.Size(), info.ModTime().UnixNano(), h.Sum(nil)[:8])
	}
	return b.String()
}

// largest returns the largest store file with the extension.
func largest(t *testing.T, dataDir, ext string) string {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(storePath(dataDir), "*"+ext))
	best, size := "", int64(-1)
	for _, p := range paths {
		if st, err := os.Stat(p); err == nil && st.Size() > size {
			best, size = p, st.Size()
		}
	}
	if best == "" {
		t.Fatalf("no %s file in %s", ext, storePath(dataDir))
	}
	return best
}

// flipByte inverts the byte at off (from the end when negative) of path,
// or, with frac >= 0, at frac of the way through its data (before the
// zeros a preallocated log ends in).
func flipByte(t *testing.T, path string, off int64, frac float64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if frac >= 0 {
		end, err := syscall.Seek(int(f.Fd()), 0, 4) // the first hole: the data's end, near enough
		if err != nil {
			t.Fatal(err)
		}
		b := make([]byte, end)
		if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
			t.Fatal(err)
		}
		last := len(b) - 1
		for last > 0 && b[last] == 0 {
			last--
		}
		off = 20 + int64(float64(last-20)*frac) // past the log header
	} else if off < 0 {
		off += st.Size()
	}
	var c [1]byte
	if _, err := f.ReadAt(c[:], off); err != nil {
		t.Fatal(err)
	}
	c[0] ^= 0xff
	if _, err := f.WriteAt(c[:], off); err != nil {
		t.Fatal(err)
	}
}

// copies returns a function that makes a fresh copy of the data dir at
// src: a fixture is built once per test (seconds under -race), copied per
// case.
func copies(src string) func(t *testing.T) string {
	return func(t *testing.T) string {
		dir := t.TempDir()
		copySparse(t, src, dir)
		return dir
	}
}

func TestDamagedStoreEveryCommand(t *testing.T) {
	t.Parallel()
	closedDataDir, killedDataDir := copies(closedDataDir(t)), copies(killedDataDir(t))
	cases := []struct {
		name   string
		make   func(t *testing.T) string
		damage func(t *testing.T, dir string) string // the file the errors must name
	}{
		{"table: byte in a block", closedDataDir, func(t *testing.T, dir string) string {
			p := largest(t, dir, ".sst")
			flipByte(t, p, 0, 0.3)
			return p
		}},
		{"table: byte in the footer", closedDataDir, func(t *testing.T, dir string) string {
			p := largest(t, dir, ".sst")
			flipByte(t, p, -2, -1)
			return p
		}},
		{"table: byte in the index length", closedDataDir, func(t *testing.T, dir string) string {
			p := largest(t, dir, ".sst")
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			n := int64(len(b))
			flipByte(t, p, n-4-int64(binary.BigEndian.Uint32(b[n-4:]))-3, -1)
			return p
		}},
		{"value log: byte in an entry", closedDataDir, func(t *testing.T, dir string) string {
			p := largest(t, dir, ".vlog")
			flipByte(t, p, 0, 0.5)
			return p
		}},
		{"value log: byte in the header", closedDataDir, func(t *testing.T, dir string) string {
			p := largest(t, dir, ".vlog")
			flipByte(t, p, 3, -1)
			return p
		}},
		{"write-ahead log of a killed crawl: byte in the middle", killedDataDir, func(t *testing.T, dir string) string {
			p := largest(t, dir, ".mem")
			flipByte(t, p, 0, 0.5)
			return p
		}},
		{"MANIFEST cut in half", closedDataDir, func(t *testing.T, dir string) string {
			p := filepath.Join(storePath(dir), "MANIFEST")
			st, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, st.Size()/2); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"MANIFEST deleted", closedDataDir, func(t *testing.T, dir string) string {
			p := filepath.Join(storePath(dir), "MANIFEST")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"MANIFEST deleted from a killed crawl's store", killedDataDir, func(t *testing.T, dir string) string {
			p := filepath.Join(storePath(dir), "MANIFEST")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"table deleted", closedDataDir, func(t *testing.T, dir string) string {
			p := largest(t, dir, ".sst")
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
			return p
		}},
		{"key registry: byte flipped", closedDataDir, func(t *testing.T, dir string) string {
			p := filepath.Join(storePath(dir), "KEYREGISTRY")
			flipByte(t, p, 20, -1)
			return p
		}},
	}
	commands := [][]string{
		{"rebuild", "--now", damageNow},
		{"crawl", "--until-idle", "--connect-to", "::127.0.0.1:1", "--now", damageNow},
		{"store", "backup", "--out", "BACKUP"},
		{"store", "verify"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.make(t)
			file := tc.damage(t, dir)
			current := readCurrent(t, dir)
			before := storeListing(t, dir)
			for _, args := range commands {
				args = append([]string(nil), args...)
				backup := filepath.Join(t.TempDir(), "backup")
				for i, a := range args {
					if a == "BACKUP" {
						args[i] = backup
					}
				}
				code, out, errOut := runIn(t, dir, args...)
				msg := strings.TrimSpace(errOut)
				switch {
				case code != exitFailure:
					t.Errorf("%q: exit %d, want %d\n%s%s", args, code, exitFailure, out, errOut)
				case strings.Contains(msg, "\n") || strings.Contains(msg, "goroutine") || strings.Contains(msg, "panic"):
					t.Errorf("%q: want one line, no panic; stderr:\n%s", args, errOut)
				case args[1] == "verify":
					if !strings.Contains(out, "DAMAGED "+file+":") || !strings.Contains(msg, "mapthenet store restore") {
						t.Errorf("%q: want %s named, and what to do; stdout:\n%sstderr: %s", args, file, out, msg)
					}
				case !strings.Contains(msg, "store file "+file+" is damaged") || !strings.Contains(msg, "mapthenet store verify"):
					t.Errorf("%q: want %s named, and what to do; got %s", args, file, msg)
				}
				if got := readCurrent(t, dir); got != current {
					t.Errorf("%q: current → %s, was %s", args, got, current)
				}
				if after := storeListing(t, dir); after != before {
					t.Fatalf("%q wrote to the store:\nbefore:\n%safter:\n%s", args, before, after)
				}
				if _, err := os.Stat(backup); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%q: a backup of a damaged store was written", args)
				}
			}
		})
	}
}

// store verify on a killed crawl's store (sound, but its write-ahead log
// not replayed) says its files are sound and its records were not read:
// never "sound" with counts of nothing.
func TestVerifyKilledStore(t *testing.T) {
	t.Parallel()
	dir := killedDataDir(t)
	code, out, errOut := runIn(t, dir, "store", "verify")
	if code != 0 || !strings.Contains(out, "not closed cleanly") || !strings.Contains(out, "its records were not read") ||
		strings.Contains(out, "is sound:") {
		t.Errorf("exit %d\n%s%s", code, out, errOut)
	}
	// A writable open (here: a rebuild) replays the log; then every record is read.
	if code, _, errOut := runIn(t, dir, "rebuild", "--now", damageNow); code != 0 {
		t.Fatalf("rebuild: exit %d: %s", code, errOut)
	}
	if code, out, _ := runIn(t, dir, "store", "verify"); code != 0 || !strings.Contains(out, "visits") || !strings.Contains(out, "is sound:") {
		t.Errorf("after a rebuild: exit %d\n%s", code, out)
	}
}
