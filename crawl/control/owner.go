package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"time"

	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// File names under the data directory.
const (
	// StoreOwnerName holds the Owner of the process that has the store open
	// for writing. Badger's own directory lock decides who may open the
	// store; this file only lets the refused process say who holds it. It
	// may be stale (a process killed with -9 leaves it behind): it is read
	// only after Badger has refused, and a dead pid is reported as such.
	StoreOwnerName = "store.owner"
	// RebuildLockName is the lock a rebuild holds while it runs (whether it
	// runs alone or inside a crawl), with its Owner as content.
	RebuildLockName = "rebuild.lock"
)

// Owner says which process holds something.
type Owner struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"` // "mapthenet crawl", "mapthenet rebuild"
	Started time.Time `json:"started"`
}

// Self is this process as an Owner.
func Self(command string, started time.Time) Owner {
	return Owner{PID: os.Getpid(), Command: command, Started: started.UTC().Truncate(time.Second)}
}

// String reads "mapthenet crawl (pid 1234, started 2026-12-02T23:00:00Z)".
func (o Owner) String() string {
	cmd := o.Command
	if cmd == "" {
		cmd = "another process"
	}
	if o.PID == 0 {
		return cmd + " (pid unknown)"
	}
	if !validPID(o.PID) {
		return fmt.Sprintf("%s (pid %d is not a process id: the owner file is damaged)", cmd, o.PID)
	}
	s := fmt.Sprintf("%s (pid %d", cmd, o.PID)
	if !o.Started.IsZero() {
		s += ", started " + o.Started.UTC().Format(time.RFC3339)
	}
	if !o.Alive() {
		s += ", no longer running"
	}
	return s + ")"
}

// Alive reports whether a process with o's pid exists (signal 0). A pid
// reused by an unrelated process reads as alive: good enough for a message.
func (o Owner) Alive() bool {
	if !validPID(o.PID) {
		return false
	}
	err := syscall.Kill(o.PID, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// validPID reports whether pid can name a process. A pid_t is a C int:
// kill(2) would read a bigger one modulo 2^32 (4294967296+1234 would ask
// about pid 1234, 2^32-1 about every process: -1), and zero or a negative
// pid names a process group. Above Linux's pid_max but in range is fine:
// kill says no such process.
func validPID(pid int) bool { return pid > 0 && int64(pid) <= math.MaxInt32 }

// WriteOwner writes o to path atomically and durably (atomicfile), so a
// reader never sees half of it.
func WriteOwner(path string, o Owner) error {
	raw, err := json.Marshal(o)
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, append(raw, '\n'), 0o600); err != nil {
		return fmt.Errorf("control: %w", err)
	}
	return nil
}

// ReadOwner reads an Owner written by WriteOwner or Lock. A missing, empty
// or unreadable file is the zero Owner (the message then says "pid
// unknown"), never an error: it only ever feeds a message.
func ReadOwner(path string) Owner {
	f, err := os.Open(path)
	if err != nil {
		return Owner{}
	}
	defer f.Close()
	var o Owner
	raw, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil || json.Unmarshal(raw, &o) != nil {
		return Owner{}
	}
	return o
}

// Lock takes an exclusive lock on path (flock: the kernel releases it when
// the process dies, so a killed holder never blocks the next) without
// waiting, and writes me into it. When another process (or another Lock in
// this one) holds it, the error wraps ErrBusy and holder is who holds it.
func Lock(path string, me Owner) (release func(), holder Owner, err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, Owner{}, fmt.Errorf("control: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, ReadOwner(path), ErrBusy
		}
		return nil, Owner{}, fmt.Errorf("control: lock %s: %w", path, err)
	}
	raw, _ := json.Marshal(me)
	// In place, not renamed: the lock is on this file. A reader may catch
	// it half-written and say "pid unknown".
	if err := f.Truncate(0); err == nil {
		f.WriteAt(append(raw, '\n'), 0)
	}
	return func() {
		f.Truncate(0) // the pid means nothing once released
		f.Close()     // releases the lock
	}, Owner{}, nil
}
