package runfile

import (
	"bytes"
	"io"
	"testing"
)

// A run reads back the bytes written to it, across S2's blocks. (A cut
// run is the callers' to refuse: graph's and rebuild's damaged-run tests.)
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir, "x-*.run")
	if err != nil {
		t.Fatal(err)
	}
	want := bytes.Repeat([]byte("run bytes "), 50_000)
	if _, err := w.Write(want); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := Open(w.Name())
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(r)
	r.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read %d bytes (err %v), want %d", len(got), err, len(want))
	}
}
