package graph

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/dustin/go-humanize"
)

// ErrDiskFull: the store's file system has less free space than
// Options.MinFreeSpace, so the store refuses to write.
var ErrDiskFull = errors.New("graph: not enough free disk space")

// DefaultMinFreeSpace is the free space a writable store insists on: room
// for the memtables' write-ahead files, a level-0 table and compactions.
//
// Why refuse early rather than let the disk fill: Badger writes its
// write-ahead log, value log and tables through memory maps of files grown
// sparse, so on a full disk the kernel answers a write with SIGBUS, which
// kills the process with a runtime fault instead of returning an error.
const DefaultMinFreeSpace = 256 << 20

// freeSpace returns the bytes an unprivileged writer may still use on the
// file system that holds dir (a variable for tests).
var freeSpace = func(dir string) (int64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return int64(uint64(st.Bavail) * uint64(st.Bsize)), nil
}

// minFree is the reserve Options ask for; 0 when unchecked.
func minFree(o Options) int64 {
	switch {
	case o.ReadOnly || o.InMemory || o.MinFreeSpace < 0:
		return 0
	case o.MinFreeSpace == 0:
		return DefaultMinFreeSpace
	}
	return o.MinFreeSpace
}

// checkSpace refuses with ErrDiskFull when the store's file system has
// less than the reserve free. One statfs(2) a write transaction: a
// microsecond beside the transaction.
func (s *Store) checkSpace() error { return checkFree(s.dir, s.minFree) }

// checkFree refuses with ErrDiskFull when dir's file system has less than
// min bytes free (min <= 0: no check).
func checkFree(dir string, min int64) error {
	if min <= 0 {
		return nil
	}
	free, err := freeSpace(dir)
	if err != nil {
		// Not knowing is no reason to stop: Badger's own errors follow.
		return nil
	}
	if free < min {
		return fmt.Errorf("%w: %s (%d bytes) free on the disk of %s, and the store needs %s (%d bytes) free to write safely: "+
			"free some space or move the data directory", ErrDiskFull, humanize.IBytes(uint64(free)), free, dir, humanize.IBytes(uint64(min)), min)
	}
	return nil
}
