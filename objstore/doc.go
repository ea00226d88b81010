// Package objstore stores snapshots and shard parts in a local directory
// or in a bucket of an S3-compatible object store (AWS S3, versitygw,
// SeaweedFS, MinIO, Ceph RGW, ...), and publishes a snapshot there so that
// readers see the old one or the new one, never part of one.
//
// # Stores
//
// A Store holds objects under '/'-separated keys: Put (atomic, from a
// reader and its size), Open (a reader with ReadAt and Size, which is what
// parquet.OpenFile takes), Stat, List (by prefix), Delete and Check. Two
// implement it:
//
//   - Dir, a local directory (the default): each Put writes a temporary
//     file beside its target, syncs it, renames it into place and syncs
//     the directory; files get mode 0666 and directories 0777, less the
//     umask.
//   - S3, a bucket and prefix on an S3-compatible server, through the MinIO
//     client: every upload request carries the MD5 of its data, which the
//     server verifies (Content-MD5), objects over the part size (16 MiB)
//     go up in parts, four at a time, transient failures are retried with
//     exponential backoff (also after a connection broke mid-body), every
//     call stops when its context is done, and every error names
//     s3://bucket/key.
//
// ParseLocation reads a --snapshots value, and Location.Open returns its
// Store:
//
//	/srv/mapthenet/snapshots    a local directory (also file:///srv/...)
//	s3://bucket/prefix          a bucket on an S3-compatible server
//
// A bad value is an error wrapping ErrBadLocation (a usage error, exit 2).
//
// # Environment (S3 only)
//
//	AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY   required
//	AWS_SESSION_TOKEN                          for temporary credentials
//	AWS_REGION (or AWS_DEFAULT_REGION)         default us-east-1
//	AWS_ENDPOINT_URL_S3 (or AWS_ENDPOINT_URL)  http(s)://host[:port] of a
//	                                           server other than AWS
//	AWS_CA_BUNDLE                              PEM file of CAs to trust
//	AWS_MAX_ATTEMPTS                           tries per request (default 10)
//	MAPTHENET_S3_URL_STYLE                     path or virtual; unset: virtual
//	                                           for AWS, path for other servers
//
// Only these variables are read: not ~/.aws files, SSO or instance roles
// (export the variables, e.g. from a systemd EnvironmentFile).
//
// # Layout
//
//	rebuilds/<id>/manifest.json       written last of the snapshot's files
//	rebuilds/<id>/domains.parquet     ... every file of the snapshot
//	rebuilds/current                  names the current snapshot
//	parts/<id>/shard=NN/...           shard exports for a merge rebuild
//
// <id> is the snapshot's as-of time, 2006-01-02T150405Z (sorting by id
// sorts by time). In a local directory rebuilds/current is a symbolic link
// to <id>, as in a data directory, so rebuilds/current/domains.parquet is
// a path DuckDB can read. On S3, which has no links, it is a small object
// holding just the id (no newline); DuckDB reads it first (README,
// "Snapshots on S3-compatible storage").
//
// # A snapshot.Storage
//
// Storage is a snapshot.Storage over a Store (staging and reading through
// a local directory), so that the rebuild and a removal write and rewrite
// snapshots there through package snapshot's interface; `rebuild
// --snapshots` uses it as the copy of a snapshot.Mirror of the data
// directory.
//
// # Publishing
//
// Publish (Upload, then SetCurrent) writes a finished snapshot from a
// local directory:
//
//  1. It refuses an id whose manifest is already in the store (ErrExists)
//     and deletes what an earlier failed upload of the id left.
//  2. It uploads every file but manifest.json, checks with a listing that
//     each arrived with its size, then uploads manifest.json: a snapshot
//     without its manifest is incomplete, and nothing reads it.
//  3. Last of all, SetCurrent replaces rebuilds/current (one PUT, or a
//     rename of a link), and only for a snapshot whose manifest is there.
//
// An upload that fails or is killed at any step leaves rebuilds/current
// naming the snapshot it named before. Readers call Resolve once ("" for
// the current snapshot) and then read that id's files, so a publish that
// moves current meanwhile does not change what they read. A reader that
// scans a whole file on S3 should Download it (one streamed GET) rather
// than hand the Object to a Parquet reader, which makes a ranged GET per
// page read; the Object is for reading the footer or a few row groups.
// Prune removes
// old complete snapshots (manifest first, never the current one), and
// RemoveIncomplete removes what failed uploads left (incomplete ids,
// temporary files, unfinished multipart uploads); call both with the
// rebuild lock held.
package objstore
