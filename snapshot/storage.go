package snapshot

import "io"

// Storage is where snapshots live: the seam between the code that writes
// and reads a snapshot's files and the place that keeps them. Dir, a local
// directory (<data-dir>/rebuilds), is the one implementation. The methods
// are those an object store (S3-compatible: one object per file under
// <prefix>/<id>/, `current` a small object naming the id, written last)
// can also provide, so that one can take Dir's place without the readers
// or the rebuild changing: files are written locally and handed over
// whole (Publish, Replace), and read back by ranges (File is an
// io.ReaderAt, which Parquet's footer-first reading needs).
//
// Ids are snapshot ids (ID); file names are data's (data.DomainsFile, ...).
type Storage interface {
	// Current returns the id `current` names; "" when there is none.
	Current() (string, error)
	// List returns the ids of the published snapshots, oldest first.
	List() ([]string, error)
	// Stat returns nil when snapshot id exists, an error wrapping
	// fs.ErrNotExist when it does not.
	Stat(id string) error
	// Open opens file of snapshot id for reading. A missing file is an
	// error wrapping fs.ErrNotExist.
	Open(id, file string) (File, error)
	// Location is where a person (or DuckDB) finds file of snapshot id: a
	// path here. With file "" it is the snapshot; with id "" too, the
	// place of all snapshots.
	Location(id, file string) string

	// Stage returns a new, empty local directory for the files of
	// snapshot id, which no reader sees until Publish. It refuses
	// (ErrExists) when id is published already.
	Stage(id string) (dir string, err error)
	// Publish makes the staged directory snapshot id. The files in it must
	// be complete and synced. A publish cut off by a crash leaves no
	// snapshot id (Dir: one rename; an object store would write the
	// manifest last and list only snapshots that have one).
	Publish(id, staged string) error
	// SetCurrent makes id the current snapshot in one step: readers see
	// the previous one or this one, never none.
	SetCurrent(id string) error
	// Replace rewrites one file of a published snapshot atomically: fill
	// writes the new file (complete and synced) at a local path and says
	// whether to keep it; if so it takes the old file's place, with the
	// old one's mode, and a reader sees one or the other, never half of
	// one. A missing file is an error wrapping fs.ErrNotExist (fill is
	// not called).
	Replace(id, file string, fill func(path string) (keep bool, err error)) error
	// Remove deletes snapshot id; one cut off never leaves half of it
	// looking like a snapshot.
	Remove(id string) error
}

// File is one snapshot file opened for reading.
type File interface {
	io.ReaderAt
	io.Closer
	Size() int64
}
