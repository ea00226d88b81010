package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// demoMarker, in a data directory, says that demo made it: demo --out
// refuses a directory that holds anything demo did not make, so that a
// simulated web is never merged into a real crawl's data (issue 13): its
// store, or, with the store moved aside to be restored, its snapshots,
// whose current the demo's rebuild would replace, and its signing keys.
const demoMarker = ".mapthenet-demo"

// claimDemoDir refuses dir when it is not empty and demo did not make it,
// and marks it as demo's otherwise (before the store is made, so that a
// demo killed midway can be run again on the same directory).
func claimDemoDir(dir string) error {
	marker := filepath.Join(dir, demoMarker)
	if _, err := os.Stat(marker); err == nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(entries) > 0 {
		what := "files demo did not make"
		if _, err := os.Stat(storePath(dir)); err == nil {
			what = "a store demo did not make (a real crawl's?)"
		}
		return fmt.Errorf("demo --out %s: the directory holds %s (%s...): demo would mix its simulated web "+
			"into them; pick a new or empty directory", dir, what, entries[0].Name())
	}
	return os.WriteFile(marker, []byte("this data directory was made by mapthenet demo\n"), 0o644)
}
