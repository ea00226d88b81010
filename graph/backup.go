package graph

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
)

// Backup writes the whole store to w as Badger's backup stream (the
// format `badger backup` writes and `badger restore` reads): one
// consistent view, taken when Backup starts, so a crawl may go on writing
// meanwhile and every visit is wholly in the backup or wholly out. It
// returns the view's version.
func (s *Store) Backup(w io.Writer) (version uint64, err error) {
	defer recoverBadger(&err, s.dir)
	// One producer, so one read transaction: Badger's default runs
	// several, each opening its own when it starts, and a commit landing
	// between two of those would be half in the backup.
	stream := s.db.NewStream()
	stream.LogPrefix = "graph.Backup"
	stream.NumGo = 1
	version, err = stream.Backup(w, 0)
	if err != nil {
		return 0, fmt.Errorf("graph: backup: %w", s.wrapRead(err))
	}
	return version, nil
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
	return RestoreWith(dir, r, Options{Logger: log})
}

// RestoreWith is Restore writing through the memtables and block cache
// of opts (MemTableSize, BlockCacheSize; 0: Badger's defaults) and
// logging to opts.Logger: a shard of a store of K restores at its own
// share of a machine's memory (a fleet node taking a shard), not at the
// whole store's. The check that it opens is read-only: no memtable.
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
		MemTableSize: opts.MemTableSize, BlockCacheSize: opts.BlockCacheSize})
	if err != nil {
		return err
	}
	func() {
		defer recoverBadger(&err, dir)
		err = s.db.Load(r, 256)
	}()
	if cerr := s.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("graph: restore into %s: %w (remove %s before trying again)", dir, err, dir)
	}
	s, err = Open(dir, Options{ReadOnly: true, Logger: log, NameCache: -1, RecordCache: -1, BlockCacheSize: opts.BlockCacheSize})
	if err != nil {
		return fmt.Errorf("graph: the restored store at %s does not open: %w", dir, err)
	}
	return s.Close()
}
