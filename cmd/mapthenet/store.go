package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mapthenet/mapthenet/crawl/control"
	"github.com/mapthenet/mapthenet/graph"
	"github.com/mapthenet/mapthenet/internal/atomicfile"
	"github.com/mapthenet/mapthenet/shard"
)

// storePath is the store's directory under the data directory.
func storePath(dataDir string) string { return filepath.Join(dataDir, "store") }

// openStore opens the data directory's store (package shard: one Badger
// store, or K shards), refusing with a message that says what to do when
// there is none and o.Create is not set (a mistyped --data-dir, an unset
// MAPTHENET_DIR in a cron line), when it is damaged, or when --shards
// asks for a K it does not have (a usage error).
func openStore(dataDir string, o shard.Options) (*shard.Store, error) {
	s, err := shard.Open(storePath(dataDir), o)
	var se *shard.ShardsError
	switch {
	case errors.Is(err, graph.ErrNoStore):
		return nil, noStoreError(dataDir)
	case errors.As(err, &se):
		return nil, usageError{err}
	}
	return s, err
}

// storeShards describes a store's K for people: "1 shard" or "8 shards".
func storeShards(s *shard.Store) string {
	if s.Shards() == 1 {
		return "1 shard"
	}
	return fmt.Sprintf("%d shards", s.Shards())
}

func noStoreError(dataDir string) error {
	return fmt.Errorf("no store in data dir %s (%s holds none): run `mapthenet init` (or pass --create) "+
		"to start a new one there, or check --data-dir and MAPTHENET_DIR", dataDir, storePath(dataDir))
}

// requireStore refuses, before a command writes anything there (a lock
// file, the data dir itself), a data dir whose store directory is missing
// or empty, as openStore would: a mistyped --data-dir must not be left
// behind as a new directory.
func requireStore(dataDir string) error {
	entries, err := os.ReadDir(storePath(dataDir))
	if errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
		return noStoreError(dataDir)
	}
	return nil
}

func newStoreCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Check, back up and restore the link store",
		Long: `store verify reads the whole store (<data-dir>/store) and reports every
damaged file; store backup writes it to one file; store restore makes a
new store from such a file. See README, "Recovering from damage".`,
	}
	cmd.AddCommand(newStoreVerifyCommand(a), newStoreBackupCommand(a), newStoreRestoreCommand(a), newStoreReshardCommand(a))
	return cmd
}

func newStoreVerifyCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "verify",
		Short: "Read the whole store and report what is damaged (exit 1 if anything is)",
		Long: `verify checks, without writing anything: the MANIFEST against the table
files, every table block's checksum, every entry of the write-ahead and
value logs, and then reads and decodes every record. It prints one line
per damaged file and exits 1 when there is any, 0 when the store is sound.
The store must not be in use (stop a running crawl first: exit 3 otherwise).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := shard.Verify(storePath(a.DataDir), a.logger)
			switch {
			case errors.Is(err, graph.ErrLocked):
				return busyError{fmt.Errorf("%w: stop the crawl, then verify", err)}
			case errors.Is(err, graph.ErrNoStore):
				return fmt.Errorf("no store in data dir %s: nothing to verify", a.DataDir)
			case err != nil:
				return err
			}
			out := cmd.OutOrStdout()
			for _, n := range rep.Notes {
				fmt.Fprintln(out, "note:", n)
			}
			for _, d := range rep.Damage {
				fmt.Fprintf(out, "DAMAGED %s: %s\n", d.File, d.What)
			}
			if !rep.OK() {
				dir := storePath(a.DataDir)
				return fmt.Errorf("%d of %d store files damaged; restore the last backup: mv %s %s.damaged, then "+
					"`mapthenet store restore FILE` (README, \"Recovering from damage\")",
					len(rep.Damage), rep.Files, dir, dir)
			}
			if !rep.RecordsRead {
				fmt.Fprintf(out, "store %s: its %d files are sound; its records were not read (see the note)\n",
					storePath(a.DataDir), rep.Files)
				return nil
			}
			fmt.Fprintf(out, "store %s is sound: %d files; %d domains, %d edges, %d visits, %d removals read\n",
				storePath(a.DataDir), rep.Files, rep.Records["domains"], rep.Records["edges"],
				rep.Records["visits"], rep.Records["removals"])
			return nil
		},
	}
}

// BackupRequest is the args of the control socket's "backup" command: a
// running crawl writes the backup of its store to Out (an absolute path).
type BackupRequest struct {
	Out string `json:"out"`
}

// BackupResult is its answer.
type BackupResult struct {
	Bytes  int64 `json:"bytes"`
	Shards int   `json:"shards"`
}

func newStoreBackupCommand(a *app) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "backup --out FILE",
		Short: "Write the whole store to one file (consistent, also while a crawl runs)",
		Long: `backup writes the store to FILE, written under a temporary name and
renamed when complete: Badger's backup stream for a store of one shard,
and for K shards a tar of the layout (shards.json) and each shard's
stream (shard-NN.badger). Each shard's view is consistent (every visit is
wholly in it or wholly out); the shards' views are all taken at once when
the backup starts. While a crawl holds the store, the crawl writes the
backup (asked over <data-dir>/crawl.sock) and goes on crawling.`,
		Example: `  mapthenet store backup --out /srv/backups/mapthenet-$(date -u +%F).badger`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if out == "" {
				return usagef("--out FILE is required")
			}
			abs, err := filepath.Abs(out)
			if err != nil {
				return usagef("--out %s: %v", out, err)
			}
			res, err := a.backupLocal(abs)
			if errors.Is(err, graph.ErrLocked) {
				sock := filepath.Join(a.DataDir, control.SocketName)
				a.logger.Info("the store is in use: asking the running crawl to write the backup", "socket", sock)
				err = control.Call(cmd.Context(), sock, "backup", BackupRequest{Out: abs}, &res)
				if errors.Is(err, control.ErrNoServer) {
					return busyError{fmt.Errorf("the store is in use and no crawl answers on %s: back up when it has finished", sock)}
				}
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "backup of %s written to %s (%d bytes)\n", storePath(a.DataDir), abs, res.Bytes)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "file to write the backup to")
	return cmd
}

func (a *app) backupLocal(out string) (BackupResult, error) {
	s, err := openStore(a.DataDir, shard.Options{Graph: graph.Options{Logger: a.logger, NameCache: -1}})
	if err != nil {
		return BackupResult{}, err
	}
	defer s.Close()
	return writeBackup(s, out)
}

// writeBackup writes s's backup to out atomically and durably
// (atomicfile.Write; 0600, as the store's own files).
func writeBackup(s *shard.Store, out string) (BackupResult, error) {
	var size int64
	err := atomicfile.Write(out, 0o600, func(f *os.File) error {
		if err := s.Backup(f, filepath.Dir(out)); err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			return err
		}
		size = st.Size()
		return nil
	})
	if err != nil {
		return BackupResult{}, fmt.Errorf("backup to %s: %w", out, err)
	}
	return BackupResult{Bytes: size, Shards: s.Shards()}, nil
}

// backupHere is the crawl's "backup" handler.
func backupHere(_ context.Context, store *shard.Store, args json.RawMessage) (any, error) {
	var req BackupRequest
	if err := json.Unmarshal(args, &req); err != nil {
		return nil, fmt.Errorf("backup request: %w", err)
	}
	if !filepath.IsAbs(req.Out) {
		return nil, fmt.Errorf("backup request: %q is not an absolute path", req.Out)
	}
	return writeBackup(store, req.Out)
}

func newStoreRestoreCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "restore FILE",
		Short: "Make a new store from a backup, in a data dir that holds no store",
		Long: `restore reads a file written by store backup into <data-dir>/store, which
must not exist or be empty: restore never merges into a store. To replace a
damaged store, move it aside first (mv <data-dir>/store <data-dir>/store.damaged).
A backup of K shards restores all of them, into a new directory renamed into
place once every shard opens: the store appears whole or not at all.`,
		Example: `  mv /var/lib/mapthenet/store /var/lib/mapthenet/store.damaged
  mapthenet store restore /srv/backups/mapthenet-2026-12-01.badger`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := os.Open(args[0])
			if err != nil {
				return usagef("%v", err)
			}
			defer f.Close()
			dir := storePath(a.DataDir)
			if err := shard.Restore(dir, f, a.logger); err != nil {
				if errors.Is(err, graph.ErrNotEmpty) {
					return fmt.Errorf("%w: move the store aside first (mv %s %s.damaged)", err, dir, strings.TrimSuffix(dir, "/"))
				}
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "store %s restored from %s\n", dir, args[0])
			return nil
		},
	}
}

// maxNowAhead is how far ahead of the clock --now may be: a replay or a
// test acts as of the past or near future; a year ahead is a typo (a
// wrong year) that would schedule every visit wrongly.
const maxNowAhead = 366 * 24 * time.Hour

// checkNow refuses a --now before 1970 (the store cannot hold such times)
// or more than maxNowAhead after clock.
func checkNow(t, clock time.Time) error {
	switch {
	case t.Before(time.Unix(0, 0)):
		return usagef("--now %s: before 1970", t.Format(time.RFC3339))
	case t.After(clock.Add(maxNowAhead)):
		return usagef("--now %s: more than a year ahead of the clock (%s)", t.Format(time.RFC3339), clock.UTC().Format(time.RFC3339))
	}
	return nil
}
