package rebuild

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
)

// PurgeResult says what PurgeDomain changed.
type PurgeResult struct {
	Snapshots []string // ids of the snapshots rewritten
	Rows      int64    // rows dropped, over every file of every snapshot
}

// PurgeDomain takes a removed domain out of every kept snapshot under
// <dataDir>/rebuilds: its rows in domains, link_words, visits and
// schedule, and every edge from or to it. The in_domains and out_domains of
// the domains it linked with lose it; ranks and scores are left as they
// were computed (the next rebuild computes them without it). Each file is
// rewritten atomically (a temporary file, fsynced, renamed over the old
// one, the directory fsynced), so that a reader (rank, DuckDB) sees the
// old or the new file, never half of one, and a purge cut off leaves only
// a temporary file that the next purge or rebuild's cleanup removes; the
// manifest's counts are updated last, the same way. Snapshots without the
// domain are left untouched.
//
// It takes the rebuild lock, waiting (until ctx ends) for a rebuild in
// progress: that rebuild may have read the store before the removal, so
// the snapshot it writes is purged too. The store must have removed the
// domain first, so that no later rebuild brings it back.
func PurgeDomain(ctx context.Context, dataDir, domain string) (PurgeResult, error) {
	var res PurgeResult
	dir := filepath.Join(dataDir, RebuildsDir)
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return res, nil // no rebuild yet: nothing kept
	}
	release, err := lockWait(ctx, dir)
	if err != nil {
		return res, err
	}
	defer release()
	ids, err := snapshotIDs(dir)
	if err != nil {
		return res, err
	}
	for _, id := range ids {
		n, err := purgeSnapshot(filepath.Join(dir, id), domain)
		if err != nil {
			return res, fmt.Errorf("snapshot %s: %w", id, err)
		}
		if n > 0 {
			res.Snapshots = append(res.Snapshots, id)
			res.Rows += n
		}
	}
	return res, nil
}

// lockWait takes the rebuild lock, polling while another holds it.
func lockWait(ctx context.Context, dir string) (func(), error) {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		release, err := lock(dir)
		if !errors.Is(err, ErrBusy) {
			return release, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the rebuild in progress to finish: %w", ctx.Err())
		case <-t.C:
		}
	}
}

// purgeSnapshot rewrites one snapshot without domain; it returns the rows
// dropped (0: the snapshot did not name it and is unchanged).
func purgeSnapshot(snap, domain string) (int64, error) {
	mpath := filepath.Join(snap, data.ManifestFile)
	m, err := ReadManifest(mpath)
	if err != nil {
		return 0, err
	}
	// Edges first: they say whose in_domains and out_domains change.
	inLess, outLess := map[string]int64{}, map[string]int64{}
	dropped := map[string]int64{}
	dropped[data.EdgesFile], err = rewriteParquet(filepath.Join(snap, data.EdgesFile), edgeRowGroup, edgeWriterOptions,
		func(r *data.EdgeRow) (keep, changed bool) {
			switch {
			case r.Src == domain:
				if !r.Nofollow {
					inLess[r.Dst]++
				}
				return false, false
			case r.Dst == domain:
				if !r.Nofollow {
					outLess[r.Src]++
				}
				return false, false
			}
			return true, false
		})
	if err != nil {
		return 0, err
	}
	dropped[data.DomainsFile], err = rewriteParquet(filepath.Join(snap, data.DomainsFile), smallRowGroup, nil,
		func(r *data.DomainRow) (keep, changed bool) {
			if r.Domain == domain {
				return false, false
			}
			in, out := inLess[r.Domain], outLess[r.Domain]
			r.InDomains = max(0, r.InDomains-in)
			r.OutDomains = max(0, r.OutDomains-out)
			return true, in != 0 || out != 0
		})
	if err != nil {
		return 0, err
	}
	dropped[data.LinkWordsFile], err = rewriteParquet(filepath.Join(snap, data.LinkWordsFile), smallRowGroup, nil,
		func(r *data.LinkWordRow) (bool, bool) { return r.Domain != domain, false })
	if err != nil {
		return 0, err
	}
	dropped[data.VisitsFile], err = rewriteParquet(filepath.Join(snap, data.VisitsFile), smallRowGroup, nil,
		func(r *data.VisitRow) (bool, bool) { return r.Domain != domain, false })
	if err != nil {
		return 0, err
	}
	dropped[data.ScheduleFile], err = rewriteParquet(filepath.Join(snap, data.ScheduleFile), smallRowGroup, nil,
		func(r *data.ScheduleRow) (bool, bool) { return r.Domain != domain, false })
	if err != nil {
		return 0, err
	}
	var total int64
	for file, n := range dropped {
		total += n
		if n > 0 && m.Counts != nil {
			m.Counts[file] = max(0, m.Counts[file]-n)
		}
	}
	if total == 0 {
		return 0, nil
	}
	tmp := filepath.Join(snap, tempPrefix+data.ManifestFile)
	os.Remove(tmp)
	if err := writeManifest(tmp, m); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := replaceFile(tmp, mpath); err != nil {
		return 0, err
	}
	return total, nil
}

// rewriteParquet streams the rows of path through edit (which may change a
// row, and says whether to keep it) into a temporary file, and renames it
// over path when some row was dropped or changed; otherwise the temporary
// file is deleted and path left as it was. The file's key-value metadata
// (domains.parquet's map fingerprint) and mode are kept. A missing file
// (a snapshot from before it existed) is nothing to do.
func rewriteParquet[T any](path string, rowGroup int64, extra []parquet.WriterOption, edit func(*T) (keep, changed bool)) (int64, error) {
	st, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	meta, err := keyValueMetadata(path)
	if err != nil {
		return 0, err
	}
	tmp := filepath.Join(filepath.Dir(path), tempPrefix+filepath.Base(path))
	os.Remove(tmp) // left by a purge cut off
	fw, err := createParquet[T](tmp, rowGroup, append(append([]parquet.WriterOption(nil), extra...), meta...)...)
	if err != nil {
		return 0, err
	}
	var dropped int64
	touched := false
	err = readParquet(path, func(rows []T) error {
		for i := range rows {
			keep, changed := edit(&rows[i])
			touched = touched || changed
			if !keep {
				dropped++
				continue
			}
			if err := fw.Add(rows[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || (dropped == 0 && !touched) {
		fw.Abort()
		os.Remove(tmp)
		return 0, err
	}
	if err := fw.Close(); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := os.Chmod(tmp, st.Mode().Perm()); err != nil {
		os.Remove(tmp)
		return 0, err
	}
	if err := replaceFile(tmp, path); err != nil {
		return 0, err
	}
	return dropped, nil
}

// replaceFile renames a complete, fsynced tmp over path and makes the
// rename durable.
func replaceFile(tmp, path string) error {
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(filepath.Dir(path))
}

// keyValueMetadata returns a Parquet file's key-value metadata as writer
// options.
func keyValueMetadata(path string) ([]parquet.WriterOption, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrNotParquet, err)
	}
	var out []parquet.WriterOption
	for _, kv := range pf.Metadata().KeyValueMetadata {
		out = append(out, parquet.KeyValueMetadata(kv.Key, kv.Value))
	}
	return out, nil
}
