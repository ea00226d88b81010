// Package snapshot owns the on-disk snapshot (DESIGN.md, "The snapshot"):
// where snapshots live, how one is written and published, and how its
// files are read. No other package spells a snapshot's path or opens one
// of its files; it imports only package data of ours, whose row types and
// schemas are the files' contract.
//
// Layout (Dir, the local directory <data-dir>/rebuilds):
//
//	rebuilds/<id>/        one complete snapshot, id = ID(as-of time), YYYY-MM-DDTHHMMSSZ:
//	                      domains, edges, link_words, visits, schedule (.parquet), manifest.json
//	rebuilds/current      relative symlink to the current snapshot
//	rebuilds/.lock        the rebuild lock (flock; Dir.Lock)
//	rebuilds/.tmp-*       a snapshot being written, or what a killed process left (Dir.CleanStale)
//
// Folders and files follow the umask (0755 and 0644 under the usual 022),
// so that the operator's DuckDB users can read them.
//
// Writing (Build): Begin stages a new snapshot; typed writers fill each
// file (Writer: rows encoded on parallel encoders into the bytes a single
// parquet-go writer would make, zstd, fixed row group sizes; fsynced on
// Close); Commit writes manifest.json and publishes the snapshot
// (directory fsynced, renamed into place, parent fsynced). Storage's
// SetCurrent then moves `current` in one step (a symlink under a temporary
// name renamed over the old one), and Prune keeps the newest --keep. A
// reader sees a whole snapshot or none.
//
// Where snapshots live is the Storage interface: Dir implements it, and
// the writers hand a finished snapshot (Publish) or a rewritten file
// (Replace) over whole, and read files by ranges, so that an object store
// (S3-compatible, `current` a small object written last) can take Dir's
// place.
//
// Reading: Open resolves `current` once (a rebuild that moves it does not
// change what an open Snapshot reads), checks the manifest's schema
// version, and streams each file in batches through Files' typed readers
// (EachDomain, EachEdge, EachLinkWord, EachVisit, EachSchedule), after
// checking the file's columns against data's row type: a damaged file is
// an error naming it (ErrNotParquet), never a panic or a silent wrong
// result. The rebuild's readers of the previous snapshot (Ranks,
// MapPositions, Communities) read only the columns they need.
//
// Removal (PurgeDomain) rewrites every kept snapshot without a domain,
// file by file, each replaced atomically, the manifest's counts last.
package snapshot
