package graph

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/ristretto/v2/z"

	"github.com/mapthenet/mapthenet/data"
)

// VerifyReport is what Verify found.
type VerifyReport struct {
	Files   int            // store files checked
	Damage  []*DamageError // one per damaged file, in file order
	Notes   []string       // not damage, but worth saying (tables a crash left unlisted)
	Records map[string]int // records read and decoded, by kind (after the file checks pass)
	// RecordsRead: the records were read (not when the files are damaged,
	// or the store was not closed cleanly: Notes says so).
	RecordsRead bool
}

// OK reports whether no damage was found.
func (r *VerifyReport) OK() bool { return len(r.Damage) == 0 }

// Verify checks the whole store in dir without writing to it: the
// MANIFEST against the tables, every table block's checksum, every
// write-ahead and value log entry (all of them, not only those an open
// replays), and then, when the files are sound, reads and decodes every
// record through Badger. It returns an error only when it cannot check
// (no store, the store is in use); damage is in the report. The store
// must not be open elsewhere (a running crawl holds it: stop it first).
func Verify(dir string, log *slog.Logger) (rep *VerifyReport, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rep = &VerifyReport{Records: map[string]int{}}
	files, err := listStore(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w at %s", ErrNoStore, dir)
	}
	if err != nil {
		return nil, err
	}
	if !files.manifest && !files.hasData(dir) {
		return nil, fmt.Errorf("%w at %s", ErrNoStore, dir)
	}
	// A store open elsewhere changes under the checks: refuse, as Open does.
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close() // releases the lock
	if syscall.Flock(int(d.Fd()), syscall.LOCK_SH|syscall.LOCK_NB) != nil {
		return nil, fmt.Errorf("%w: another process (a running crawl?) holds the store at %s", ErrLocked, dir)
	}
	bo := badger.DefaultOptions(dir)
	add := func(err error) {
		var d *DamageError
		if errors.As(err, &d) {
			rep.Damage = append(rep.Damage, d)
		} else if err != nil {
			rep.Damage = append(rep.Damage, &DamageError{File: dir, What: err.Error()})
		}
	}
	var m badger.Manifest
	if !files.manifest {
		add(damaged(filepath.Join(dir, badger.ManifestFilename), "it is missing, but the directory holds the store's tables or logs"))
	} else {
		rep.Files++
		path := filepath.Join(dir, badger.ManifestFilename)
		if fp, err := os.Open(path); err != nil {
			add(damaged(path, "unreadable: %v", err))
		} else {
			st, _ := fp.Stat()
			var end int64
			m, end, err = replayManifest(fp, bo)
			fp.Close()
			switch {
			case err != nil:
				add(damaged(path, "it does not parse (%v)", err))
			case end < st.Size():
				add(damaged(path, "it is cut or garbled after byte %d of %d", end, st.Size()))
			case len(m.Tables) == 0 && len(files.tables) > 0:
				add(damaged(path, "it lists no table, but the directory holds %d", len(files.tables)))
			}
			for id := range m.Tables {
				if _, ok := files.tables[id]; !ok {
					add(damaged(filepath.Join(dir, fmt.Sprintf("%06d.sst", id)), "it is missing (the MANIFEST lists it)"))
				}
			}
		}
	}
	if st, err := os.Stat(filepath.Join(dir, badger.KeyRegistryFileName)); err == nil {
		if !st.Mode().IsRegular() {
			add(damaged(filepath.Join(dir, badger.KeyRegistryFileName), "it is not a file"))
		} else {
			rep.Files++
			add(checkKeyRegistry(dir))
		}
	}
	ids := make([]uint64, 0, len(files.tables))
	for id := range files.tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		rep.Files++
		path := filepath.Join(dir, files.tables[id])
		tm, listed := m.Tables[id]
		if !listed {
			tm.Compression = options.Snappy // Open's: the best guess for a table the MANIFEST does not describe
		}
		if !listed && len(m.Tables) > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s is not in the MANIFEST (a crash between writing and recording it leaves such a file); the next writable open moves it aside", path))
		}
		add(verifyTableFile(path, tm.Compression, bo))
	}
	for _, name := range append(slices.Clone(files.mems), files.vlogs...) {
		rep.Files++
		r, err := scanLog(filepath.Join(dir, name))
		add(err)
		if err == nil && r.dropped > 0 {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s ends in %d bytes of a transaction never committed (a process killed mid-commit); the next writable open drops them", filepath.Join(dir, name), r.dropped))
		}
	}
	slices.SortFunc(rep.Damage, func(a, b *DamageError) int {
		if a.File < b.File {
			return -1
		}
		if a.File > b.File {
			return 1
		}
		return 0
	})
	if !rep.OK() {
		return rep, nil
	}
	// The files are sound: read every record as a rebuild would.
	s, err := Open(dir, Options{ReadOnly: true, Logger: log, NameCache: -1, RecordCache: -1})
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, err
		}
		if uncleanHint(err, true) != "" {
			// Badger will not read a store that was not closed without
			// replaying its logs for writing, which verify does not do.
			rep.Notes = append(rep.Notes, "the store was not closed cleanly (a killed crawl?): its files are sound, "+
				"but its records were not read; open it once for writing (any crawl or rebuild does), then verify again to read them")
			return rep, nil
		}
		add(err)
		return rep, nil
	}
	defer s.Close()
	err = s.readAll(rep.Records)
	add(err)
	rep.RecordsRead = err == nil
	return rep, nil
}

// verifyTableFile opens one table file as Badger does and checks every
// block's checksum. (Badger's own DB.VerifyChecksum dereferences a nil
// block when one fails, so the panic is caught here, where the file is
// known.)
func verifyTableFile(path string, c options.CompressionType, bo badger.Options) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = damaged(path, "%s", tablePanic(p))
		} else if err != nil && !errors.Is(err, ErrDamaged) {
			err = damaged(path, "%s", oneLine(err.Error()))
		}
	}()
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		if errors.Is(err, os.ErrNotExist) {
			return err
		}
		return damaged(path, "unreadable: %v", err)
	}
	t, err := table.OpenTable(mf, table.Options{
		ReadOnly:           true,
		BlockSize:          bo.BlockSize,
		BloomFalsePositive: bo.BloomFalsePositive,
		ChkMode:            options.OnBlockRead,
		Compression:        c,
	})
	if err != nil {
		mf.Close(-1)
		return err
	}
	// Not t.DecrRef: at zero references it deletes the table's file.
	defer t.MmapFile.Close(-1)
	return t.VerifyChecksum()
}

// tablePanic says what a panic while checking a table means, in one line.
func tablePanic(p any) string {
	if _, ok := p.(runtime.Error); ok {
		// Badger's VerifyChecksum dereferences the nil block it got back
		// with the error (table.go), so the error itself is lost.
		return "a data block fails its checksum or does not decode"
	}
	msg := fmt.Sprint(p)
	if strings.Contains(msg, "initIndex") {
		// Badger prints what it read of the footer, over several lines.
		return "its index or footer does not decode"
	}
	return "it does not decode (" + oneLine(msg) + ")"
}

// verifyTables checks every table the MANIFEST lists, block by block.
// On an open store (live) a table compacted away meanwhile is skipped.
func verifyTables(dir string, bo badger.Options, live bool) error {
	fp, err := os.Open(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return damaged(filepath.Join(dir, badger.ManifestFilename), "unreadable: %v", err)
	}
	m, _, err := replayManifest(fp, bo)
	fp.Close()
	if err != nil && !live {
		return damaged(filepath.Join(dir, badger.ManifestFilename), "it does not parse (%v)", err)
	}
	ids := make([]uint64, 0, len(m.Tables))
	for id := range m.Tables {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		path := filepath.Join(dir, fmt.Sprintf("%06d.sst", id))
		err := verifyTableFile(path, m.Tables[id].Compression, bo)
		if errors.Is(err, os.ErrNotExist) && live {
			continue
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// readAll reads and decodes every record, counting them by kind.
func (s *Store) readAll(counts map[string]int) (err error) {
	defer recoverBadger(&err, s.dir)
	if err := s.VerifyTables(); err != nil {
		return err
	}
	sn, err := s.Snapshot()
	if err != nil {
		return err
	}
	defer sn.Close()
	err = sn.Domains(func(*data.DomainState) error { counts["domains"]++; return nil })
	if err == nil {
		err = sn.Edges(func(*data.EdgeRecord) error { counts["edges"]++; return nil })
	}
	if err == nil {
		err = sn.Visits(func(*data.VisitLogEntry) error { counts["visits"]++; return nil })
	}
	if err == nil {
		err = sn.Removed(func(Removal) error { counts["removals"]++; return nil })
	}
	if err == nil {
		err = sn.scan(prefixName, func(k, v []byte) error {
			if len(v) != 4 {
				return fmt.Errorf("%w: id of name %q", errCorrupt, k[len(prefixName):])
			}
			counts["names"]++
			return nil
		})
	}
	return err
}

func oneLine(s string) string {
	out := []rune{}
	space := false
	for _, r := range s {
		if r == '\n' || r == '\t' || r == ' ' {
			space = true
			continue
		}
		if space && len(out) > 0 {
			out = append(out, ' ')
		}
		space = false
		out = append(out, r)
	}
	return string(out)
}
