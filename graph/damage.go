package graph

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// preOpen checks dir before Badger opens it (integrity.go), under the
// directory lock Badger itself takes (flock: exclusive for a writer,
// shared for a reader), so that a running crawl's files, which change
// under it, are never judged. When the lock is held elsewhere it checks
// nothing: Badger then refuses with ErrLocked. exists is false when dir
// holds no store.
func preOpen(dir string, bo badger.Options, readOnly bool, log *slog.Logger) (exists bool, err error) {
	d, err := os.Open(dir)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("graph: open store at %s: %w", dir, err)
	}
	defer d.Close() // releases the lock
	how := syscall.LOCK_EX
	if readOnly {
		how = syscall.LOCK_SH
	}
	if syscall.Flock(int(d.Fd()), how|syscall.LOCK_NB) != nil {
		return true, nil
	}
	if !readOnly {
		if err := removeTornFilesLocked(dir, log); err != nil {
			return true, fmt.Errorf("graph: open store at %s: %w", dir, err)
		}
	}
	return checkBeforeOpen(dir, bo, readOnly, log)
}

// VerifyTables checks every table's block checksums again, for a store
// that has been open a while (Open checked them before Badger opened).
func (s *Store) VerifyTables() error {
	if s.dir == "" {
		return nil
	}
	return verifyTables(s.dir, s.db.Opts(), true)
}

// storeFile finds the first store file a Badger error names.
var storeFile = regexp.MustCompile(`[^\s:"']*(\.sst|\.vlog|\.mem|MANIFEST)\b`)

// asDamage turns a Badger error that says a file is damaged into a
// *DamageError naming it; nil for other errors.
func asDamage(err error, dir string) error {
	if err == nil {
		return nil
	}
	var de *DamageError
	if errors.As(err, &de) {
		return de
	}
	msg := err.Error()
	low := strings.ToLower(msg)
	if !strings.Contains(low, "checksum") && !strings.Contains(low, "corrupt") &&
		!strings.Contains(low, "does not exist for table") && !strings.Contains(low, "failed to initialize table") &&
		!strings.Contains(low, "invalid checksum") && !strings.Contains(low, "panic inside badger") &&
		!strings.Contains(low, "manifest") && !strings.Contains(low, "block out of index") {
		return nil
	}
	file := dir
	if m := storeFile.FindString(msg); m != "" {
		file = m
		if !strings.Contains(m, "/") {
			file = dir + "/" + m
		}
	}
	if strings.Contains(low, "does not exist for table") {
		var id uint64
		if i := strings.Index(low, "for table "); i >= 0 {
			fmt.Sscanf(msg[i+len("for table "):], "%d", &id)
			file = fmt.Sprintf("%s/%06d.sst", dir, id)
			return &DamageError{File: file, What: "it is missing (the MANIFEST lists it)"}
		}
	}
	// One line: Badger's messages wrap causes with newlines.
	return &DamageError{File: file, What: strings.Join(strings.Fields(msg), " ")}
}

// recoverBadger turns a panic inside a Badger call on this goroutine (a
// damaged table Badger did not expect) into a *DamageError, so that the
// command ends with a message, not a stack trace. Deferred by the
// functions that call into Badger.
func recoverBadger(err *error, dir string) {
	p := recover()
	if p == nil {
		return
	}
	stack := string(debug.Stack())
	msg := fmt.Sprintf("panic inside badger: %v", p)
	if d := asDamage(errors.New(msg+" "+stack), dir); d != nil {
		de := d.(*DamageError)
		de.What = msg
		*err = de
		return
	}
	*err = &DamageError{File: dir, What: msg}
}

// wrapRead turns a read error that names damage into a *DamageError.
func (s *Store) wrapRead(err error) error {
	if err == nil || s.dir == "" {
		return err
	}
	if d := asDamage(err, s.dir); d != nil {
		return d
	}
	return err
}

// EnsureVerified checks the tables' checksums (VerifyTables) unless this
// store did so in the last minute (Open does): a rebuild calls it before
// reading, so that a rebuild right after Open does not read them twice.
func (s *Store) EnsureVerified() error {
	s.mu.Lock()
	recent := !s.verifiedAt.IsZero() && time.Since(s.verifiedAt) < time.Minute
	s.mu.Unlock()
	if recent {
		return nil
	}
	if err := s.VerifyTables(); err != nil {
		return err
	}
	s.mu.Lock()
	s.verifiedAt = time.Now()
	s.mu.Unlock()
	return nil
}

// SyncWrites reports whether every commit is synced to disk before it
// returns (always, for a store on disk: Open's options).
func (s *Store) SyncWrites() bool { return s.db.Opts().SyncWrites }
