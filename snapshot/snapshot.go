package snapshot

import (
	"errors"
	"fmt"
	"os"

	"github.com/mapthenet/mapthenet/data"
)

// ErrNoSnapshot: no rebuild has completed in this data directory yet.
var ErrNoSnapshot = errors.New("no snapshot yet: run mapthenet rebuild")

// Snapshot is a complete snapshot opened for reading: its files, and its
// manifest, checked.
type Snapshot struct {
	Files
	Manifest *data.Manifest
}

// Open opens the snapshot id of the data directory dataDir, or the
// current one when id is "". See OpenIn.
func Open(dataDir, id string) (*Snapshot, error) { return OpenIn(Local(dataDir), id) }

// OpenIn opens snapshot id of st, or the current one when id is "". The
// current one is resolved once: a rebuild that moves `current` meanwhile
// does not change what this Snapshot reads (until --keep prunes it, which
// takes many rebuilds). Its manifest must be readable and of this
// program's schema version.
func OpenIn(st Storage, id string) (*Snapshot, error) {
	if id == "" {
		cur, err := st.Current()
		if err != nil {
			return nil, err
		}
		if cur == "" {
			return nil, fmt.Errorf("%w (%s has no %s)", ErrNoSnapshot, st.Location("", ""), CurrentName)
		}
		id = cur
	}
	if err := st.Stat(id); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("snapshot %s: %s does not exist", id, st.Location(id, ""))
		}
		return nil, err
	}
	m, err := ReadManifest(st, id)
	if err != nil {
		return nil, fmt.Errorf("snapshot %s is incomplete or damaged: %w", id, err)
	}
	if err := checkSchema(id, m); err != nil {
		return nil, err
	}
	return &Snapshot{Files: At(st, id), Manifest: m}, nil
}
