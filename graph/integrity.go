package graph

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"
)

// What the store checks before Badger opens it, because Badger, left to
// itself, turns damage into silent loss (issue 13): it opens a directory
// whose MANIFEST is gone as a new, empty store and writes over the table
// files; it deletes every table a (cut) MANIFEST does not list; and it cuts
// a write-ahead or value log at its first bad entry, dropping every
// committed transaction after it. So, before Badger sees the directory:
//
//   - tables (.sst) or logs with entries but no MANIFEST, or a MANIFEST that
//     does not parse, is cut mid-record, lists no table while tables exist,
//     or lists a table that is missing: refused (DamageError);
//   - tables the MANIFEST does not list (a crash between writing a table
//     and recording it leaves them; their data is still in the logs or in
//     the tables they were compacted from) are moved aside into
//     orphaned/, never deleted, and named in a warning;
//   - the key registry (KEYREGISTRY) reads, and every log's header names no
//     encryption key (the store is never encrypted: Badger, finding one,
//     refuses only after it has started a new write-ahead log);
//   - each log Badger replays is read as Badger reads it: an unfinished
//     last transaction (a process killed mid-commit, never acknowledged) is
//     dropped with a warning saying how much; a bad entry with committed
//     data after it is refused;
//   - every block of every table the MANIFEST lists passes its checksum.
//
// The log format read here is Badger v4's (value.go, memtable.go): a
// 20-byte header, then entries of meta, user meta, uvarint key length,
// uvarint value length, uvarint expiry, key, value, and a CRC-32C of all
// that; a transaction's entries carry bitTxn and end with a bitFinTxn
// entry whose value is the commit timestamp. FORMAT.md names the version.

// ErrDamaged: the store's files are damaged. The error (a *DamageError)
// names the file and what to do.
var ErrDamaged = errors.New("graph: the store is damaged")

// ErrNoStore: the directory holds no store and Options.Create was not set.
var ErrNoStore = errors.New("graph: no store")

// DamageError names a damaged store file.
type DamageError struct {
	File string // path of the damaged file (or the store directory)
	What string // what is wrong with it
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("store file %s is damaged: %s; nothing was changed. Run `mapthenet store verify` to see all "+
		"the damage, then move the store aside and restore the last backup with `mapthenet store restore FILE` "+
		"(README, \"Recovering from damage\")", e.File, e.What)
}

func (e *DamageError) Is(target error) bool { return target == ErrDamaged }

func damaged(file, format string, a ...any) error {
	return &DamageError{File: file, What: fmt.Sprintf(format, a...)}
}

// Badger's log entry meta bits and header size (value.go).
const (
	logHeaderSize = 20
	bitTxn        = 1 << 6
	bitFinTxn     = 1 << 7
	maxKeyLen     = 1 << 16
)

// storeFiles is what a store directory holds, by kind.
type storeFiles struct {
	manifest bool
	tables   map[uint64]string // id → file name
	mems     []string          // write-ahead logs, in id order
	vlogs    []string          // value logs, in id order
}

func listStore(dir string) (storeFiles, error) {
	f := storeFiles{tables: map[uint64]string{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return f, err
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		switch ext := filepath.Ext(name); {
		case name == badger.ManifestFilename:
			f.manifest = true
		case ext == ".sst":
			id, err := strconv.ParseUint(strings.TrimSuffix(name, ext), 10, 64)
			if err == nil {
				f.tables[id] = name
			}
		case ext == ".mem":
			f.mems = append(f.mems, name)
		case ext == ".vlog":
			f.vlogs = append(f.vlogs, name)
		}
	}
	// Names are zero-padded ids, but not beyond five digits: sort by id.
	byID := func(a, b string) int {
		x, _ := strconv.ParseUint(strings.TrimSuffix(a, filepath.Ext(a)), 10, 64)
		y, _ := strconv.ParseUint(strings.TrimSuffix(b, filepath.Ext(b)), 10, 64)
		return int(x) - int(y)
	}
	slices.SortFunc(f.mems, byID)
	slices.SortFunc(f.vlogs, byID)
	return f, nil
}

// hasData reports whether the store directory holds anything a store
// wrote: tables, or logs with at least one entry.
func (f storeFiles) hasData(dir string) bool {
	if len(f.tables) > 0 {
		return true
	}
	for _, name := range append(slices.Clone(f.mems), f.vlogs...) {
		if st, err := os.Stat(filepath.Join(dir, name)); err == nil && st.Size() > logHeaderSize {
			if r, err := scanLog(filepath.Join(dir, name)); err != nil || r.end > logHeaderSize || r.dropped > 0 {
				return true
			}
		}
	}
	return false
}

// checkBeforeOpen runs the checks above on dir. exists is false when dir
// holds no store at all (missing, or empty of store files).
func checkBeforeOpen(dir string, bo badger.Options, readOnly bool, log *slog.Logger) (exists bool, err error) {
	files, err := listStore(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !files.manifest {
		if files.hasData(dir) {
			return true, damaged(filepath.Join(dir, badger.ManifestFilename),
				"it is missing, but the directory holds the store's tables or logs (opening would start an empty "+
					"store over them)")
		}
		return false, nil
	}
	if err := checkManifest(dir, files, bo, readOnly, log); err != nil {
		return true, err
	}
	if err := checkKeyRegistry(dir); err != nil {
		return true, err
	}
	// Every table block's checksum, here rather than by Badger's
	// OnTableAndBlockRead, which panics in its own goroutines on a bad one.
	if err := verifyTables(dir, bo, false); err != nil {
		return true, err
	}
	// Badger replays every write-ahead log and the last value log, and
	// reads the older value logs only when a value is asked for: check
	// them all (the value threshold keeps them small: only the edge sets
	// of the few huge sources live there).
	for _, name := range append(slices.Clone(files.mems), files.vlogs...) {
		path := filepath.Join(dir, name)
		r, err := scanLog(path)
		if err != nil {
			return true, err
		}
		if r.dropped > 0 && !readOnly { // a read-only open drops nothing (Verify notes it)
			log.Warn("store log ends in a transaction that was never committed (a process killed mid-commit): "+
				"dropping it; nothing acknowledged is lost", "file", path, "bytes_dropped", r.dropped,
				"entries_dropped", r.droppedEntries, "at_offset", r.end)
		}
	}
	return true, nil
}

// checkManifest checks the MANIFEST against the table files, and moves
// unlisted tables aside (see above).
func checkManifest(dir string, files storeFiles, bo badger.Options, readOnly bool, log *slog.Logger) error {
	path := filepath.Join(dir, badger.ManifestFilename)
	fp, err := os.Open(path)
	if err != nil {
		return damaged(path, "unreadable: %v", err)
	}
	defer fp.Close()
	st, err := fp.Stat()
	if err != nil {
		return damaged(path, "unreadable: %v", err)
	}
	m, end, err := replayManifest(fp, bo)
	if err != nil {
		return damaged(path, "it does not parse (%v)", err)
	}
	if end < st.Size() {
		return damaged(path, "it is cut or garbled after byte %d of %d (the tables it would forget would be deleted)",
			end, st.Size())
	}
	if len(m.Tables) == 0 && len(files.tables) > 0 {
		return damaged(path, "it lists no table, but the directory holds %d (it was cut or replaced)", len(files.tables))
	}
	for id := range m.Tables {
		if _, ok := files.tables[id]; !ok {
			return damaged(filepath.Join(dir, fmt.Sprintf("%06d.sst", id)), "it is missing (the MANIFEST lists it)")
		}
	}
	var orphans []string
	for id, name := range files.tables {
		if _, ok := m.Tables[id]; !ok {
			orphans = append(orphans, name)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	if readOnly {
		// Badger would delete them even on a read-only open.
		return fmt.Errorf("graph: open store at %s: %d table files the MANIFEST does not list (%s...): open it once "+
			"for writing (any crawl or rebuild does), which moves them aside, or run `mapthenet store verify`",
			dir, len(orphans), orphans[0])
	}
	// Badger would delete these; keep them instead.
	slices.Sort(orphans)
	aside := filepath.Join(dir, "orphaned")
	if err := os.MkdirAll(aside, 0o755); err != nil {
		return err
	}
	for _, name := range orphans {
		if err := os.Rename(filepath.Join(dir, name), filepath.Join(aside, name)); err != nil {
			return err
		}
	}
	log.Warn("moved table files the MANIFEST does not list aside, rather than let them be deleted (a crash between "+
		"writing a table and recording it leaves such files, and their data is elsewhere; if the MANIFEST was "+
		"damaged instead, restore the store from a backup)", "files", orphans, "to", aside)
	return nil
}

// checkKeyRegistry reads KEYREGISTRY as Badger does on open, read-only
// (which writes nothing, and nothing when the file is missing: Badger
// makes a new one then).
func checkKeyRegistry(dir string) error {
	kr, err := badger.OpenKeyRegistry(badger.KeyRegistryOptions{Dir: dir, ReadOnly: true})
	if err != nil {
		return damaged(filepath.Join(dir, badger.KeyRegistryFileName), "it does not read (%s); the store is "+
			"not encrypted, so the file holds no key: moving it aside is enough, Badger writes a new one", oneLine(err.Error()))
	}
	return kr.Close()
}

// replayManifest parses the MANIFEST with Badger's own reader, which
// writes nothing; a panic in it (a garbled record) is damage too.
func replayManifest(fp *os.File, bo badger.Options) (m badger.Manifest, end int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	return badger.ReplayManifestFile(fp, bo.ExternalMagicVersion, bo)
}

// logScan is what scanLog found in a log file.
type logScan struct {
	end            int64 // offset after the last committed entry
	entries        int   // committed entries
	dropped        int64 // bytes of an unfinished last transaction after end
	droppedEntries int
}

// scanLog reads a write-ahead or value log as Badger's replay does and
// says where Badger will cut it. A file that Badger would cut with
// committed-looking data after the cut is damaged; an unfinished last
// transaction (entries with good checksums, then nothing) is not: a
// process killed mid-commit leaves one, and it was never acknowledged.
// A bad entry that ends in zeros, with nothing but zeros after it, is
// taken as a write cut short (a kill mid-copy, a power loss), also never
// acknowledged (writes are synced before a commit returns).
func scanLog(path string) (logScan, error) {
	var r logScan
	f, err := os.Open(path)
	if err != nil {
		return r, damaged(path, "unreadable: %v", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return r, damaged(path, "unreadable: %v", err)
	}
	size := st.Size()
	if size >= 8 {
		// The header: the data key's id (8 bytes, 0: no encryption, which
		// this store never uses), then an IV that only encryption reads.
		var id [8]byte
		if _, err := f.ReadAt(id[:], 0); err != nil {
			return r, damaged(path, "unreadable: %v", err)
		}
		if k := binary.BigEndian.Uint64(id[:]); k != 0 {
			return r, damaged(path, "its header is damaged (it names encryption key %d; this store is not encrypted)", k)
		}
	}
	if size <= logHeaderSize {
		return logScan{end: size}, nil
	}
	br := bufio.NewReaderSize(f, 1<<20)
	if _, err := br.Discard(logHeaderSize); err != nil {
		return r, damaged(path, "unreadable: %v", err)
	}
	off := int64(logHeaderSize)
	r.end = off
	var txnTs uint64
	var txnEntries int
	var bad bool     // stopped on a bad entry, not on zeros or the end
	var badAt int64  // where the bad entry starts
	var badEnd int64 // where the bad entry claims to end
	var buf []byte
	for {
		e, n, err := readLogEntry(br, &buf)
		if err != nil || e.key == nil {
			bad = err != nil && err != io.EOF
			if bad {
				badAt, badEnd = off, off+n
			}
			break
		}
		at := off
		off += n
		switch {
		case e.meta&bitTxn != 0:
			ts := keyTs(e.key)
			if txnTs == 0 {
				txnTs = ts
			}
			if ts != txnTs {
				bad, badAt, badEnd = true, at, off
			} else {
				txnEntries++
			}
		case e.meta&bitFinTxn != 0:
			ts, err := strconv.ParseUint(string(e.value), 10, 64)
			if err != nil || ts != txnTs {
				bad, badAt, badEnd = true, at, off
			} else {
				r.entries += txnEntries
				txnTs, txnEntries = 0, 0
				r.end = off
			}
		default:
			if txnTs != 0 {
				bad, badAt, badEnd = true, at, off
			} else {
				r.entries++
				r.end = off
			}
		}
		if bad {
			break
		}
	}
	// What lies after the cut: Badger drops all of it.
	last, err := lastNonZero(f, r.end, size)
	if err != nil {
		return r, damaged(path, "unreadable: %v", err)
	}
	if last < 0 {
		return r, nil // zeros only: nothing dropped
	}
	r.dropped = last + 1 - r.end
	r.droppedEntries = txnEntries
	// A write cut short (a process killed mid-copy, a power loss) leaves
	// the rest of its entry zero; a damaged entry is whole, its last byte
	// (the checksum's) set. So a bad entry whose last byte is non-zero, or
	// data after it, is damage.
	if bad && last >= badEnd-1 {
		return r, damaged(path, "the entry at byte %d fails its checksum or does not parse; opening would cut the log "+
			"at byte %d, the end of the last whole transaction before it, and drop the %d bytes after (to byte %d) "+
			"with every transaction in them", badAt, r.end, last+1-r.end, last+1)
	}
	return r, nil
}

type logEntry struct {
	meta       byte
	key, value []byte
}

// readLogEntry reads one entry; a zero entry (no key) ends the log. n is
// how many bytes the entry takes (or claims, for a bad one).
func readLogEntry(br *bufio.Reader, buf *[]byte) (logEntry, int64, error) {
	var e logEntry
	h := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	tee := io.TeeReader(br, h)
	var hdr [2]byte
	if _, err := io.ReadFull(tee, hdr[:]); err != nil {
		return e, 0, io.EOF
	}
	br2 := byteReader{tee}
	klen, err1 := binary.ReadUvarint(br2)
	vlen, err2 := binary.ReadUvarint(br2)
	exp, err3 := binary.ReadUvarint(br2)
	if err1 != nil || err2 != nil || err3 != nil {
		return e, 0, io.EOF
	}
	hlen := int64(2 + uvarintLen(klen) + uvarintLen(vlen) + uvarintLen(exp))
	n := hlen + int64(klen) + int64(vlen) + 4
	if klen == 0 && vlen == 0 && hdr[0] == 0 {
		return e, 0, nil // zeros: the end
	}
	if klen > maxKeyLen || vlen > 1<<32 {
		return e, n, errors.New("bad entry")
	}
	if cap(*buf) < int(klen+vlen) {
		*buf = make([]byte, klen+vlen)
	}
	kv := (*buf)[:klen+vlen]
	if _, err := io.ReadFull(tee, kv); err != nil {
		return e, n, errors.New("bad entry")
	}
	var crc [4]byte
	if _, err := io.ReadFull(br, crc[:]); err != nil {
		return e, n, errors.New("bad entry")
	}
	if binary.BigEndian.Uint32(crc[:]) != h.Sum32() {
		return e, n, errors.New("bad checksum")
	}
	if klen == 0 {
		return e, n, errors.New("bad entry")
	}
	e.meta, e.key, e.value = hdr[0], kv[:klen], kv[klen:]
	return e, n, nil
}

type byteReader struct{ r io.Reader }

func (b byteReader) ReadByte() (byte, error) {
	var c [1]byte
	_, err := io.ReadFull(b.r, c[:])
	return c[0], err
}

func uvarintLen(v uint64) int { return len(binary.AppendUvarint(nil, v)) }

// keyTs is the version Badger appends to a key (y.ParseTs).
func keyTs(key []byte) uint64 {
	if len(key) < 8 {
		return 0
	}
	return ^binary.BigEndian.Uint64(key[len(key)-8:])
}

// lastNonZero returns the offset of the last non-zero byte in [from, to),
// or -1. Badger preallocates its logs (a value log of a store that was
// not closed is 2 GiB, nearly all a hole), so only the file's data
// extents are read (SEEK_DATA, SEEK_HOLE); where the file system cannot
// say, all of it is.
func lastNonZero(f *os.File, from, to int64) (int64, error) {
	const chunk = 1 << 20
	buf := make([]byte, chunk)
	last := int64(-1)
	for off := from; off < to; {
		start, end := dataExtent(f, off, to)
		if start >= to {
			break
		}
		for ; start < end; start += chunk {
			n := min(chunk, end-start)
			if _, err := f.ReadAt(buf[:n], start); err != nil && err != io.EOF {
				return 0, err
			}
			for i := n - 1; i >= 0; i-- {
				if buf[i] != 0 {
					last = start + i
					break
				}
			}
		}
		off = end
	}
	return last, nil
}

// Linux's lseek whence values for sparse files (not in package syscall).
const (
	seekData = 3
	seekHole = 4
)

// dataExtent returns the next extent of f at or after off that may hold
// data, [start, end) within to; start is to or beyond when there is none.
func dataExtent(f *os.File, off, to int64) (start, end int64) {
	fd := int(f.Fd())
	start, err := syscall.Seek(fd, off, seekData)
	if errors.Is(err, syscall.ENXIO) {
		return to, to // only a hole after off
	}
	if err != nil {
		return off, to // no sparse-file support: read it all
	}
	end, err = syscall.Seek(fd, start, seekHole)
	if err != nil || end > to {
		end = to
	}
	return start, end
}
