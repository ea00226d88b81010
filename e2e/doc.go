// Package e2e holds end-to-end tests: the real crawler crawls a simulated
// web (simweb) over real HTTP and HTTPS on loopback, a real rebuild writes
// the Parquet snapshot, and the tests check every promise a site owner can
// see from the server's request log and the exact edges, outcomes and
// visits from the snapshot. It has no code of its own.
package e2e
