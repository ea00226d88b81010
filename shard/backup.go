package shard

import (
	"archive/tar"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/internal/atomicfile"
)

// Backup writes the whole store to w. A store of one shard in today's
// layout writes Badger's backup stream (graph.Store.Backup), as backups
// always have been. A store of K shards writes a tar archive: LayoutFile,
// then shard-NN.badger, each shard's backup stream. Every shard's view is
// consistent in itself (a visit wholly in or out), and all are opened at
// once when Backup starts; across shards they may differ by the visits
// committed in those few milliseconds, which no visit spans (a visit
// writes one shard). The streams are staged in tmpDir (a tar entry needs
// its size first), in parallel, and removed after. A shard open
// read-only (Options.ReadOnlyShards) is backed up as it is on disk.
func (s *Store) Backup(w io.Writer, tmpDir string) error {
	if s.plain {
		_, err := s.shards[0].Backup(w)
		return err
	}
	// No shard is swapped (SetWritable, ReplaceShard) while its stream is
	// read: the swap would close the store under it.
	s.swap.RLock()
	files := make([]*os.File, len(s.shards))
	defer func() {
		for _, f := range files {
			if f != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}
	}()
	// Not parallel(): every shard's stream starts at once, so that the
	// views are taken together.
	errs := make([]error, len(s.shards))
	done := make(chan int)
	for i := range s.shards {
		go func() {
			defer func() { done <- i }()
			f, err := os.CreateTemp(tmpDir, ".backup-"+ShardDir(i)+"-*")
			if err != nil {
				errs[i] = err
				return
			}
			files[i] = f
			bw := bufio.NewWriterSize(f, 1<<20)
			if _, err := s.shards[i].Backup(bw); err != nil {
				errs[i] = fmt.Errorf("shard %d: %w", i, err)
				return
			}
			errs[i] = bw.Flush()
		}()
	}
	for range s.shards {
		<-done
	}
	s.swap.RUnlock()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	lb, err := layoutJSON(layoutOf(s.router))
	if err != nil {
		return err
	}
	now := time.Now()
	if err := tw.WriteHeader(&tar.Header{Name: LayoutFile, Mode: 0o644, Size: int64(len(lb)), ModTime: now}); err != nil {
		return err
	}
	if _, err := tw.Write(lb); err != nil {
		return err
	}
	for i, f := range files {
		st, err := f.Stat()
		if err != nil {
			return err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Name: ShardDir(i) + ".badger", Mode: 0o644, Size: st.Size(), ModTime: now}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, f); err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return tw.Close()
}

// Restore makes a new store at dir from what Backup wrote (either form:
// it tells them apart by the tar header). dir must not exist or be empty
// (graph.ErrNotEmpty): a restore never merges into a store. A store of K
// shards is restored into a new directory beside dir, every shard checked
// to open as its shard, and then renamed into place: it appears whole or
// not at all.
func Restore(dir string, r io.Reader, log *slog.Logger) error {
	if exists, err := holdsStore(dir); err != nil {
		return err
	} else if exists {
		return fmt.Errorf("%w: %s holds a store", graph.ErrNotEmpty, dir)
	}
	br := bufio.NewReaderSize(r, 1<<20)
	head, _ := br.Peek(512)
	if !isTar(head) {
		return graph.Restore(dir, br, log)
	}
	parent, base := filepath.Dir(dir), filepath.Base(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	removeStale(parent, "."+base+".restore-")
	tmp, err := os.MkdirTemp(parent, "."+base+".restore-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	tr := tar.NewReader(br)
	var l Layout
	haveLayout := false
	restored := map[int]bool{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("shard: restore: not a whole backup: %w", err)
		}
		if h.Name == LayoutFile {
			b, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			if err != nil {
				return err
			}
			if err := writeSynced(filepath.Join(tmp, LayoutFile), b); err != nil {
				return err
			}
			if l, haveLayout, err = ReadLayout(tmp); err != nil || !haveLayout {
				return fmt.Errorf("shard: restore: the backup's %s: %v", LayoutFile, err)
			}
			continue
		}
		var i int
		if _, err := fmt.Sscanf(h.Name, "shard-%d.badger", &i); err != nil || !haveLayout || i < 0 || i >= l.Shards || restored[i] ||
			h.Name != ShardDir(i)+".badger" {
			return fmt.Errorf("shard: restore: unexpected entry %q in the backup", h.Name)
		}
		sdir := filepath.Join(tmp, ShardDir(i))
		// Checked below, by opening it as its shard.
		if err := graph.RestoreWith(sdir, tr, graph.Options{Logger: log}); err != nil {
			return fmt.Errorf("shard %d: %w", i, err)
		}
		restored[i] = true
	}
	if !haveLayout || len(restored) != l.Shards {
		return fmt.Errorf("shard: restore: the backup holds %d of %d shards: it was cut short", len(restored), l.Shards)
	}
	// Every shard opens as itself.
	if err := parallel(l.Shards, func(i int) error {
		s, err := openShard(tmp, l, i, graph.Options{Logger: log, NameCache: -1, RecordCache: -1})
		if err != nil {
			return err
		}
		return s.Close()
	}); err != nil {
		return err
	}
	if err := atomicfile.SyncDir(tmp); err != nil {
		return err
	}
	return moveInto(tmp, dir)
}

// RestoreShard makes shard i of the sharded store at dir from one shard's
// backup stream (graph.Store.Backup of that shard: what a fleet node that
// held it put in the snapshot store). The shard's directory must not
// exist or be empty; the restored store must be shard i of dir's layout.
func RestoreShard(dir string, i int, r io.Reader, log *slog.Logger) error {
	l, sharded, err := ReadLayout(dir)
	if err != nil {
		return err
	}
	if !sharded {
		return fmt.Errorf("%w: %s has no %s: not a sharded store", ErrLayout, dir, LayoutFile)
	}
	if i < 0 || i >= l.Shards {
		return fmt.Errorf("shard: shard %d of a store of %d", i, l.Shards)
	}
	sdir := filepath.Join(dir, ShardDir(i))
	// Checked below, by opening it as shard i.
	if err := graph.RestoreWith(sdir, r, graph.Options{Logger: log}); err != nil {
		return err
	}
	s, err := openShard(dir, l, i, graph.Options{Logger: log, NameCache: -1, RecordCache: -1})
	if err != nil {
		os.RemoveAll(sdir)
		return fmt.Errorf("shard %d: the restored store is not this shard (removed again): %w", i, err)
	}
	return s.Close()
}

// restoreMemTable is the memtable a backup of size bytes is loaded
// through, for a shard of options o: four times its size (a key costs its
// skiplist node and more besides), at least 1 MiB, at most the shard's own
// memtable. The store loaded is closed at once, so its memtable is only a
// write buffer, and Badger allocates (and zeroes) all of it at the open:
// at 64 shards a 16 MiB memtable, 21 MiB of heap, for a backup of a few
// KiB. A backup bigger than it is loaded in several flushes, as before.
func restoreMemTable(size int64, o graph.Options) int64 {
	mt := o.MemTableSize
	if mt <= 0 {
		mt = 64 << 20 // graph's default
	}
	if size < 0 {
		return mt
	}
	return min(mt, max(4*size, 1<<20))
}

// isTar reports whether b starts with a POSIX tar header.
func isTar(b []byte) bool {
	return len(b) >= 512 && (bytes.Equal(b[257:262], []byte("ustar")))
}

func layoutJSON(l Layout) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeLayoutTo(&buf, l); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Verify checks the store at dir without writing to it (graph.Verify of
// every shard, and the layout: every shard there, marked as itself). The
// report's damaged files name their shard's directory. It returns an error
// only when it cannot check (no store, a shard in use).
func Verify(dir string, log *slog.Logger) (*graph.VerifyReport, error) {
	l, sharded, err := ReadLayout(dir)
	if err != nil {
		rep := &graph.VerifyReport{Records: map[string]int{}}
		rep.Damage = append(rep.Damage, &graph.DamageError{File: filepath.Join(dir, LayoutFile), What: err.Error()})
		return rep, nil
	}
	if !sharded {
		return graph.Verify(dir, log)
	}
	rep := &graph.VerifyReport{Records: map[string]int{}}
	for i := range l.Shards {
		sdir := filepath.Join(dir, ShardDir(i))
		r, err := graph.Verify(sdir, log)
		if errors.Is(err, graph.ErrNoStore) {
			rep.Damage = append(rep.Damage, &graph.DamageError{File: sdir, What: fmt.Sprintf("shard %d of %d is missing", i, l.Shards)})
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		rep.Files += r.Files
		rep.Damage = append(rep.Damage, r.Damage...)
		for _, n := range r.Notes {
			rep.Notes = append(rep.Notes, fmt.Sprintf("shard %d: %s", i, n))
		}
		for k, v := range r.Records {
			rep.Records[k] += v
		}
		if r.OK() {
			// The files are sound: is it the shard it should be?
			s, err := openShard(dir, l, i, graph.Options{Logger: log, ReadOnly: true, NameCache: -1, RecordCache: -1})
			switch {
			case errors.Is(err, ErrLayout):
				rep.Damage = append(rep.Damage, &graph.DamageError{File: sdir, What: err.Error()})
			case err == nil:
				s.Close()
			}
		}
	}
	return rep, nil
}

// ReplaceShard replaces shard i of the open store s with the store in the
// backup stream r (graph.Store.Backup of that shard: a fleet node taking
// a shard whose latest copy is the backup its last owner left in the
// snapshot store). The backup is restored beside the shard and checked to
// be shard i of this store before it takes the shard's place; the old
// copy is removed only then. On an error the old copy stays (reopened).
// The new copy is opened as the old one was (for writing or read-only,
// SetWritable), with the shard's fence. The crawl's calls on the store
// wait while the shard is swapped. size is the backup's length in bytes
// (negative: not known): the restore loads it through a memtable sized to
// it (restoreMemTable) rather than the shard's own.
func (s *Store) ReplaceShard(i int, r io.Reader, size int64, log *slog.Logger) error {
	if s.plain {
		return fmt.Errorf("%w: %s is a store of one shard in the old layout", ErrLayout, s.dir)
	}
	if i < 0 || i >= len(s.shards) {
		return fmt.Errorf("shard: shard %d of a store of %d", i, len(s.shards))
	}
	l, _, err := ReadLayout(s.dir)
	if err != nil {
		return err
	}
	staged := filepath.Join(s.dir, ".restore-"+ShardDir(i))
	if err := os.RemoveAll(staged); err != nil {
		return err
	}
	gopts := s.gopts
	gopts.Logger = log
	gopts.MemTableSize = restoreMemTable(size, gopts)
	// Checked below, by opening it as shard i (graph.RestoreWith).
	if err := graph.RestoreWith(staged, r, gopts); err != nil {
		os.RemoveAll(staged)
		return err
	}
	s.swap.Lock()
	defer s.swap.Unlock()
	if err := s.shards[i].Close(); err != nil {
		return fmt.Errorf("shard %d: closing it for the restore: %w", i, err)
	}
	sdir := filepath.Join(s.dir, ShardDir(i))
	old := filepath.Join(s.dir, ".replaced-"+ShardDir(i))
	os.RemoveAll(old)
	reopenOld := func(cause error) error {
		if st, err := s.openLocked(l, i, s.writable[i]); err == nil {
			s.setShard(i, st)
		} else {
			cause = fmt.Errorf("%w; and reopening the old copy: %w", cause, err)
		}
		os.RemoveAll(staged)
		return cause
	}
	if err := os.Rename(sdir, old); err != nil {
		return reopenOld(err)
	}
	if err := os.Rename(staged, sdir); err != nil {
		os.Rename(old, sdir)
		return reopenOld(err)
	}
	st, err := s.openLocked(l, i, s.writable[i])
	if err != nil {
		os.RemoveAll(sdir)
		os.Rename(old, sdir)
		return reopenOld(fmt.Errorf("shard %d: the backup is not this shard: %w", i, err))
	}
	s.setShard(i, st)
	if err := atomicfile.SyncDir(s.dir); err != nil {
		return err
	}
	return os.RemoveAll(old)
}
