package graph

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"google.golang.org/protobuf/proto"
)

// Backup writes the whole store to w as Badger's backup stream (the
// format `badger backup` writes and `badger restore` and DB.Load read:
// length-prefixed pb.KVList messages), from one read transaction: one
// consistent view, taken when Backup starts, so a crawl may go on writing
// meanwhile and every visit is wholly in the backup or wholly out. The
// stream begins and ends with an empty list, which Badger's loader reads
// as nothing: Restore refuses a stream that began with one but does not
// end with one, so a backup cut short between two lists is refused rather
// than restored as a smaller store (see backupFrames). It returns the
// view's version.
//
// Hand-written rather than Badger's Stream.Backup: that allocates a
// fresh 32 MiB buffer (zeroed Go memory without jemalloc) per key range,
// and a 1 MiB allocator per range, however small the store; a fleet node
// handing off 64 small shards spent some 5 CPU-s in them alone. This
// writes the latest version of every live key (a restore is always into
// an empty store, where an older version or a deletion marker changes
// nothing a read sees) in lists of about backupList bytes.
func (s *Store) Backup(w io.Writer) (version uint64, err error) {
	defer recoverBadger(&err, s.dir)
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	b := backupWriter{w: w}
	if err := b.flush(); err != nil { // the leading empty list: the end is marked
		return 0, fmt.Errorf("graph: backup: %w", err)
	}
	it := txn.NewIterator(badger.IteratorOptions{})
	defer it.Close()
	for it.Rewind(); it.Valid(); it.Next() {
		item := it.Item()
		if err := item.Value(func(v []byte) error { return b.add(item, v) }); err != nil {
			return 0, fmt.Errorf("graph: backup: %w", s.wrapRead(err))
		}
	}
	if err := b.flush(); err != nil {
		return 0, fmt.Errorf("graph: backup: %w", err)
	}
	if err := b.flush(); err != nil { // the closing empty list
		return 0, fmt.Errorf("graph: backup: %w", err)
	}
	return txn.ReadTs(), nil
}

// backupList is about how many bytes of keys and values one list of a
// backup stream holds: small enough that the loader's buffer stays small,
// large enough that the framing costs nothing.
const backupList = 1 << 20

// backupWriter batches a backup's keys and values into pb.KVLists and
// writes each with its length before it. Keys and values are copied into
// one slab, from 64 KiB growing to backupList bytes (one larger than the
// slab gets its own copy), and the slab, the list and the output buffer
// are reused from list to list.
type backupWriter struct {
	w    io.Writer
	slab []byte
	kvs  []*pb.KV // reused; list.Kv is kvs[:n]
	n    int
	size int // bytes of keys and values in the current list
	out  []byte
}

// add appends one key's latest version, value v, to the current list,
// writing the list first when v would not fit in its slab.
func (b *backupWriter) add(item *badger.Item, v []byte) error {
	key := item.Key()
	size := len(key) + len(v) + 1
	if b.n > 0 && (b.size+size > backupList || len(b.slab)+size > cap(b.slab)) {
		if err := b.flush(); err != nil {
			return err
		}
	}
	if b.slab == nil {
		b.slab = make([]byte, 0, 64<<10)
	}
	copyOf := func(p []byte) []byte {
		if len(b.slab)+len(p) > cap(b.slab) {
			return bytes.Clone(p)
		}
		start := len(b.slab)
		b.slab = append(b.slab, p...)
		return b.slab[start:len(b.slab):len(b.slab)]
	}
	if b.n == len(b.kvs) {
		b.kvs = append(b.kvs, new(pb.KV))
	}
	kv := b.kvs[b.n]
	b.n++
	b.size += size
	*kv = pb.KV{Key: copyOf(key), Value: copyOf(v), Version: item.Version(), ExpiresAt: item.ExpiresAt()}
	if um := item.UserMeta(); um != 0 {
		kv.UserMeta = copyOf([]byte{um})
	}
	return nil
}

// flush writes the current list (empty when nothing was added since the
// last: the markers at the stream's ends) as DB.Load reads it: its size
// as a little-endian uint64, then the message.
func (b *backupWriter) flush() error {
	list := pb.KVList{Kv: b.kvs[:b.n]}
	out, err := proto.MarshalOptions{}.MarshalAppend(append(b.out[:0], make([]byte, 8)...), &list)
	if err != nil {
		return err
	}
	binary.LittleEndian.PutUint64(out, uint64(len(out)-8))
	b.out = out
	for _, kv := range b.kvs[:b.n] {
		*kv = pb.KV{} // the slab is reused: no list keeps pointing into it
	}
	if len(b.slab) > cap(b.slab)/2 && cap(b.slab) < backupList {
		// A store that fills its slab gets a bigger one, up to backupList:
		// a small store's backup allocates (and zeroes) 64 KiB, not 1 MiB.
		b.slab = make([]byte, 0, min(2*cap(b.slab), backupList))
	}
	b.n, b.size, b.slab = 0, 0, b.slab[:0]
	_, err = b.w.Write(out)
	return err
}

// Version is the version of the store's last commit (Badger's read
// timestamp): every write moves it on. A Backup begun after Version
// returned v holds everything up to v, so a store whose Version is still
// v needs no new backup.
func (s *Store) Version() (v uint64, err error) {
	defer recoverBadger(&err, s.dir)
	txn := s.db.NewTransaction(false)
	defer txn.Discard()
	return txn.ReadTs(), nil
}

// ErrNotEmpty: Restore's directory already holds something.
var ErrNotEmpty = errors.New("graph: restore needs an empty store directory")

// Restore makes a new store in dir from a Backup stream. dir must not
// exist or be empty: a restore never merges into a store. The restored
// store is opened once more, read-only, to check it is a mapthenet store.
func Restore(dir string, r io.Reader, log *slog.Logger) error {
	if err := RestoreWith(dir, r, Options{Logger: log}); err != nil {
		return err
	}
	s, err := Open(dir, Options{ReadOnly: true, Logger: log, NameCache: -1, RecordCache: -1})
	if err != nil {
		return fmt.Errorf("graph: the restored store at %s does not open: %w", dir, err)
	}
	return s.Close()
}

// RestoreWith is Restore without the check, writing through the
// memtables and block cache of opts (MemTableSize, BlockCacheSize; 0:
// Badger's defaults) and logging to opts.Logger: a shard of a store of K
// restores at its own share of a machine's memory (a fleet node taking a
// shard), not at the whole store's. The caller must Open the store before
// trusting it, as shard does (as the shard it must be, for writing or
// not): Open is the check, and as strong as Restore's (every table's
// checksums, every log, the format key), so a restore checks once, not
// twice. A stream cut short is refused here (backupFrames), a store left
// unusable by a failed restore is removed by the caller.
func RestoreWith(dir string, r io.Reader, opts Options) (err error) {
	log := opts.Logger
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		return fmt.Errorf("%w: %s holds %d entries", ErrNotEmpty, dir, len(entries))
	}
	s, err := Open(dir, Options{Create: true, Logger: log, NameCache: -1, RecordCache: -1,
		MemTableSize: opts.MemTableSize, BlockCacheSize: opts.BlockCacheSize, GC: GCOptions{Interval: -1}})
	if err != nil {
		return err
	}
	frames := &backupFrames{r: r}
	func() {
		defer recoverBadger(&err, dir)
		err = s.db.Load(frames, 256)
	}()
	switch {
	case err == nil:
		err = frames.whole()
	case frames.inHead > 0 || frames.left > 0:
		err = fmt.Errorf("%w: it ends inside its list %d (%v)", ErrCutBackup, frames.lists, err)
	}
	if cerr := s.closeLoaded(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("graph: restore into %s: %w (remove %s before trying again)", dir, err, dir)
	}
	return nil
}

// closeLoaded closes a store that RestoreWith loaded, without Close's GC
// pass: a store just loaded has nothing to trim or collect, and after a
// DB.Load that failed midway a read would wait forever (Load gives up
// without marking the writes it began done, and a new transaction waits
// for them).
func (s *Store) closeLoaded() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("graph: close store at %s: %w", s.dir, err)
	}
	return nil
}

// ErrCutBackup: a backup stream ends before its end.
var ErrCutBackup = errors.New("graph: the backup was cut short")

// maxBackupList is the largest list a backup stream may hold: Backup
// writes lists of about backupList bytes, Badger's Stream.Backup
// (older backups) lists of up to about 130 MiB. A larger length is
// damage, refused before DB.Load allocates it.
const maxBackupList = 1 << 30

// backupFrames follows the framing of a backup stream as DB.Load reads it
// through, so that the restore can tell a whole stream from a cut one. A
// stream Backup wrote begins with an empty list and ends with one; Badger
// never writes an empty list (its Stream skips empty batches), so a
// stream that begins with a non-empty one is an older backup, made by
// Badger's Stream.Backup, whose end cannot be told: it is taken as it is.
type backupFrames struct {
	r      io.Reader
	head   [8]byte
	inHead int    // bytes of the current length read so far
	left   uint64 // bytes of the current list not yet read
	lists  int    // lengths read
	marked bool   // the first list was empty: the stream's end is marked
	last   uint64 // the length of the last list
}

func (f *backupFrames) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	for b := p[:n]; len(b) > 0; {
		if f.left > 0 {
			k := min(uint64(len(b)), f.left)
			f.left -= k
			b = b[k:]
			continue
		}
		k := copy(f.head[f.inHead:], b)
		f.inHead += k
		b = b[k:]
		if f.inHead < len(f.head) {
			continue
		}
		f.inHead = 0
		f.last = binary.LittleEndian.Uint64(f.head[:])
		if f.last > maxBackupList {
			// Not even the bytes before it: DB.Load must not see the length.
			return 0, fmt.Errorf("graph: not a backup stream (a list of %d bytes after %d lists)", f.last, f.lists)
		}
		if f.lists == 0 {
			f.marked = f.last == 0
		}
		f.lists++
		f.left = f.last
	}
	return n, err
}

// whole reports whether the stream DB.Load read to its end was a whole
// backup.
func (f *backupFrames) whole() error {
	switch {
	case f.lists == 0:
		return fmt.Errorf("%w: it is empty", ErrCutBackup)
	case f.inHead > 0 || f.left > 0:
		return fmt.Errorf("%w: it ends inside its list %d", ErrCutBackup, f.lists)
	case f.marked && (f.lists < 2 || f.last != 0):
		return fmt.Errorf("%w: it ends after its list %d, not at its end marker", ErrCutBackup, f.lists)
	}
	return nil
}
