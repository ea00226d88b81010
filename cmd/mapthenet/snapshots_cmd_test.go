package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mapthenet/mapthenet/objstore"
	"github.com/mapthenet/mapthenet/objstore/objstoretest"
	"github.com/mapthenet/mapthenet/snapshot"
)

// rebuild --snapshots s3://...: the snapshot is published there too, with
// `current` an object naming it; a removal rewrites that copy as well. A
// bad location is a usage error, before anything is written.
//
// Not parallel: --snapshots takes its S3 credentials and endpoint from the
// process's AWS_* environment (t.Setenv), which every test would see.
func TestRebuildSnapshotsS3(t *testing.T) {
	dir := t.TempDir()
	fillStore(t, dir)
	if code, _, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z", "--snapshots", "s3://"); code != exitUsage {
		t.Errorf("--snapshots s3://: exit %d: %s", code, errOut)
	}
	srv := objstoretest.Start(t)
	env := srv.Env()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_ENDPOINT_URL_S3", "AWS_REGION", "AWS_MAX_ATTEMPTS"} {
		t.Setenv(k, env(k))
	}
	url := srv.URL("mapthenet")
	code, out, errOut := runIn(t, dir, "rebuild", "--now", "2026-12-01T03:00:00Z", "--snapshots", url)
	if code != 0 || !strings.Contains(out, "copy: "+url+"/rebuilds/2026-12-01T030000Z") {
		t.Fatalf("rebuild --snapshots: exit %d: %s %s", code, out, errOut)
	}
	st := srv.Store("mapthenet", nil)
	if cur, err := objstore.Current(context.Background(), st); err != nil || cur != "2026-12-01T030000Z" {
		t.Errorf("current in the bucket: %q, %v", cur, err)
	}
	// remove force --snapshots: the bucket's copy loses the domain too.
	if code, _, errOut := runIn(t, dir, "remove", "force", "b.example", "--reason", "asked", "--snapshots", url); code != 0 {
		t.Fatalf("remove --snapshots: exit %d: %s", code, errOut)
	}
	rows, err := snapshot.At(objstore.NewStorage(context.Background(), st, t.TempDir(), nil), "2026-12-01T030000Z").Domains()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 {
		t.Fatal("no domains in the bucket's snapshot")
	}
	for _, r := range rows {
		if r.Domain == "b.example" {
			t.Error("the bucket's domains.parquet still lists the removed domain")
		}
	}
}
