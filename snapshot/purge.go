package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/parquet-go/parquet-go"

	"github.com/mapthenet/mapthenet/data"
)

// PurgeResult says what PurgeDomain changed.
type PurgeResult struct {
	Snapshots []string // ids of the snapshots rewritten
	Rows      int64    // rows dropped, over every file of every snapshot
}

// PurgeDomain takes a removed domain out of every kept snapshot of the
// data directory: its rows in domains, link_words, visits and schedule,
// and every edge from or to it. The in_domains and out_domains of the
// domains it linked with lose it; ranks and scores are left as they were
// computed (the next rebuild computes them without it). Each file is
// rewritten atomically (Storage.Replace), so that a reader (rank, DuckDB)
// sees the old or the new file, never half of one, and a purge cut off
// leaves only a temporary file that the next purge removes; the
// manifest's counts are updated last, the same way. Snapshots without the
// domain are left untouched.
//
// It takes the rebuild lock, waiting (until ctx ends) for a rebuild in
// progress: that rebuild may have read the store before the removal, so
// the snapshot it writes is purged too. The store must have removed the
// domain first, so that no later rebuild brings it back.
func PurgeDomain(ctx context.Context, dataDir, domain string) (PurgeResult, error) {
	return PurgeDomainIn(ctx, dataDir, Local(dataDir), domain)
}

// PurgeDomainIn is PurgeDomain over the snapshots of st (a Mirror of the
// data directory's and a copy elsewhere: `remove --snapshots`), under the
// data directory's rebuild lock.
func PurgeDomainIn(ctx context.Context, dataDir string, st Storage, domain string) (PurgeResult, error) {
	var res PurgeResult
	d := Local(dataDir)
	if _, err := os.Stat(d.root); errors.Is(err, os.ErrNotExist) {
		return res, nil // no rebuild yet: nothing kept
	}
	release, err := d.LockWait(ctx)
	if err != nil {
		return res, err
	}
	defer release()
	ids, err := st.List()
	if err != nil {
		return res, err
	}
	for _, id := range ids {
		n, err := purgeSnapshot(st, id, domain)
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

// purgeSnapshot rewrites one snapshot without domain; it returns the rows
// dropped (0: the snapshot did not name it and is unchanged).
func purgeSnapshot(st Storage, id, domain string) (int64, error) {
	m, err := ReadManifest(st, id)
	if err != nil {
		return 0, err
	}
	// Edges first: they say whose in_domains and out_domains change.
	inLess, outLess := map[string]int64{}, map[string]int64{}
	dropped := map[string]int64{}
	dropped[data.EdgesFile], err = rewrite(st, id, data.EdgesFile, edgeRowGroup, edgeWriterOptions,
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
	dropped[data.DomainsFile], err = rewrite(st, id, data.DomainsFile, smallRowGroup, nil,
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
	dropped[data.LinkWordsFile], err = rewrite(st, id, data.LinkWordsFile, smallRowGroup, nil,
		func(r *data.LinkWordRow) (bool, bool) { return r.Domain != domain, false })
	if err != nil {
		return 0, err
	}
	dropped[data.VisitsFile], err = rewrite(st, id, data.VisitsFile, smallRowGroup, nil,
		func(r *data.VisitRow) (bool, bool) { return r.Domain != domain, false })
	if err != nil {
		return 0, err
	}
	dropped[data.ScheduleFile], err = rewrite(st, id, data.ScheduleFile, smallRowGroup, nil,
		func(r *data.ScheduleRow) (bool, bool) { return r.Domain != domain, false })
	if err != nil {
		return 0, err
	}
	var total int64
	if sp := m.SchedulePartitions; sp != nil {
		// A fleet rebuild's snapshot: the domain's row is in one
		// partition; each is read (the domain's shard is the router's to
		// say), the one that held it rewritten and its checksum updated.
		for i := range sp.Files {
			p := &sp.Files[i]
			n, err := rewrite(st, id, p.File, smallRowGroup, nil,
				func(r *data.ScheduleRow) (bool, bool) { return r.Domain != domain, false })
			if err != nil {
				return 0, err
			}
			if n == 0 {
				continue
			}
			if p.SHA256, err = storedSHA256(st, id, p.File); err != nil {
				return 0, err
			}
			p.Rows = max(0, p.Rows-n)
			total += n
		}
	}
	for file, n := range dropped {
		total += n
		if n > 0 && m.Counts != nil {
			m.Counts[file] = max(0, m.Counts[file]-n)
		}
	}
	if total == 0 {
		return 0, nil
	}
	err = st.Replace(id, data.ManifestFile, func(path string) (bool, error) {
		return true, writeManifest(path, m)
	})
	if err != nil {
		return 0, err
	}
	return total, nil
}

// rewrite streams the rows of one file of snapshot id through edit (which
// may change a row, and says whether to keep it) into a new file that
// replaces it (Storage.Replace) when some row was dropped or changed;
// otherwise the file is left as it was. The new file is written as a
// rebuild writes it (rowGroup, extra), with the old one's key-value
// metadata (domains.parquet's map fingerprint). A missing file (a
// snapshot from before it existed) is nothing to do.
func rewrite[T any](st Storage, id, file string, rowGroup int64, extra []parquet.WriterOption, edit func(*T) (keep, changed bool)) (int64, error) {
	var dropped int64
	err := st.Replace(id, file, func(path string) (bool, error) {
		in, err := st.Open(id, file)
		if err != nil {
			return false, err
		}
		defer in.Close()
		name := st.Location(id, file)
		meta, err := keyValueMetadata(in, name)
		if err != nil {
			return false, err
		}
		fw, err := create[T](path, rowGroup, append(append([]parquet.WriterOption(nil), extra...), meta...)...)
		if err != nil {
			return false, err
		}
		touched := false
		err = readParquet(in, name, func(rows []T) error {
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
			dropped = 0
			return false, err
		}
		return true, fw.Close()
	})
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return dropped, nil
}

// storedSHA256 is the SHA-256, in hex, of file of snapshot id in st.
func storedSHA256(st Storage, id, file string) (string, error) {
	f, err := st.Open(id, file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(f, 0, f.Size())); err != nil {
		return "", fmt.Errorf("%s: %w", st.Location(id, file), err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// keyValueMetadata returns a Parquet file's key-value metadata as writer
// options.
func keyValueMetadata(f File, name string) ([]parquet.WriterOption, error) {
	pf, err := openColumns(f, name)
	if err != nil {
		return nil, err
	}
	var out []parquet.WriterOption
	for _, kv := range pf.Metadata().KeyValueMetadata {
		out = append(out, parquet.KeyValueMetadata(kv.Key, kv.Value))
	}
	return out, nil
}
