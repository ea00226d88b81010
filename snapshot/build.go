package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
)

// Build is a snapshot being written. Its files go to a directory that
// Storage.Stage made, through typed writers that give every file its
// row group size, encodings and compression (the same bytes for the same
// rows); Commit adds the manifest and hands the directory to the Storage
// to publish. Until then no reader sees any of it; Abort (or a crash)
// drops it.
//
// A Build is used by one goroutine (each Writer has its own encoders).
// Whoever builds holds the rebuild lock (Dir.Lock).
type Build struct {
	id     string
	st     Storage
	staged string
	done   bool
}

// Begin starts snapshot id (ID of its as-of time) in st. It refuses
// (ErrExists) when st has it already.
func Begin(st Storage, id string) (*Build, error) {
	if _, ok := ParseID(id); !ok {
		return nil, fmt.Errorf("snapshot id %q: want %s", id, data.SnapshotIDLayout)
	}
	staged, err := st.Stage(id)
	if err != nil {
		return nil, err
	}
	return &Build{id: id, st: st, staged: staged}, nil
}

// ID is the id of the snapshot being built.
func (b *Build) ID() string { return b.id }

func (b *Build) path(file string) string { return filepath.Join(b.staged, file) }

// Staged is the local path of a file of this snapshot already written and
// closed, for a later stage of the build that reads it back (the rebuild
// ranks by streaming the edges.parquet it wrote). No reader outside the
// build sees it until Commit.
func (b *Build) Staged(file string) string { return b.path(file) }

// CreateEdges starts edges.parquet.
func (b *Build) CreateEdges() (*Writer[data.EdgeRow], error) {
	return create[data.EdgeRow](b.path(data.EdgesFile), edgeRowGroup, edgeWriterOptions...)
}

// CreateVisits starts visits.parquet.
func (b *Build) CreateVisits() (*Writer[data.VisitRow], error) {
	return create[data.VisitRow](b.path(data.VisitsFile), smallRowGroup)
}

// CreateDomains starts domains.parquet. mapFingerprint, when not "", is
// kept in the file's footer (MapFingerprintKey) for the next rebuild.
func (b *Build) CreateDomains(mapFingerprint string) (*Writer[data.DomainRow], error) {
	var meta []parquet.WriterOption
	if mapFingerprint != "" {
		meta = append(meta, parquet.KeyValueMetadata(MapFingerprintKey, mapFingerprint))
	}
	return create[data.DomainRow](b.path(data.DomainsFile), smallRowGroup, meta...)
}

// CreateLinkWords starts link_words.parquet, rows in its order (by
// domain id, then sites descending, then word).
func (b *Build) CreateLinkWords() (*Writer[data.LinkWordRow], error) {
	return create[data.LinkWordRow](b.path(data.LinkWordsFile), smallRowGroup)
}

// WriteLinkWords writes link_words.parquet at once; it returns the rows
// written.
func (b *Build) WriteLinkWords(rows []data.LinkWordRow) (int64, error) {
	return writeAll(b.path(data.LinkWordsFile), smallRowGroup, rows)
}

// WriteSchedule writes schedule.parquet at once, rows in the order the
// crawl takes them; it returns the rows written.
func (b *Build) WriteSchedule(rows []data.ScheduleRow) (int64, error) {
	return writeAll(b.path(data.ScheduleFile), smallRowGroup, rows)
}

// WriteSchedulePartition writes shard's schedule partition
// (data.SchedulePartitionFile) at once, rows in schedule.parquet's order,
// with schedule.parquet's columns and encoding: a fleet rebuild writes one
// per shard, and lists what this returns in the manifest.
func (b *Build) WriteSchedulePartition(shard int, rows []data.ScheduleRow) (data.SchedulePartition, error) {
	file := data.SchedulePartitionFile(shard)
	if err := os.MkdirAll(filepath.Dir(b.path(file)), dirMode()); err != nil {
		return data.SchedulePartition{}, err
	}
	n, err := writeAll(b.path(file), smallRowGroup, rows)
	if err != nil {
		return data.SchedulePartition{}, err
	}
	sum, err := FileSHA256(b.path(file))
	if err != nil {
		return data.SchedulePartition{}, err
	}
	return data.SchedulePartition{Shard: shard, File: file, Rows: n, SHA256: sum}, nil
}

// FileSHA256 is the SHA-256 of the local file path, in hex (the checksum
// the manifest lists a schedule partition with).
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Commit writes the manifest (its id and schema version must be this
// snapshot's) and publishes the snapshot: after it returns nil, the
// snapshot is complete and durable, and st lists it. It does not move
// `current` (Storage.SetCurrent does).
func (b *Build) Commit(m *data.Manifest) error {
	if b.done {
		return fmt.Errorf("snapshot %s: committed or aborted already", b.id)
	}
	if m.ID != b.id {
		return fmt.Errorf("snapshot %s: the manifest names %q", b.id, m.ID)
	}
	if err := checkSchema(b.id, m); err != nil {
		return err
	}
	if err := writeManifest(b.path(data.ManifestFile), m); err != nil {
		return err
	}
	if err := b.st.Publish(b.id, b.staged); err != nil {
		return err
	}
	b.done = true
	return nil
}

// Abort drops what the build wrote, unless it was committed; a second
// call does nothing. Writers still open must be aborted first.
func (b *Build) Abort() {
	if b.done {
		return
	}
	b.done = true
	os.RemoveAll(b.staged)
}
