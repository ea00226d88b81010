// Package site is `mapthenet serve`: one read-only HTTP server over the
// current snapshot (DESIGN.md, "serve", has its routes and JSON API).
//
// A snapshot is loaded whole into an [Index] (flat columns, the links by
// source and by target, the map's payloads compressed once), swapped in
// atomically when rebuilds/current moves ([Server.Refresh], [Server.Watch]);
// requests read the index they started with, without locks. Every read of
// a snapshot's files is in source.go, the one place that knows which
// package owns snapshots.
//
// The map page draws the points with WebGL 2 (static/map.js, hand-written,
// no build step; embedded into the binary with the templates and CSS).
package site
