// Package data holds the record types shared by every stage of mapthenet
// and the Parquet schemas of the snapshot files. The row types in schema.go
// are the files' contract (see DESIGN.md, "The snapshot"): change a column
// here and you change what operators query, so the golden test in
// schema_test.go pins every file's schema.
//
// data imports no other package of this module.
package data
